"""One model's shifted conditions (ImageNet-C corruptions, generated or read from a tree).

Every pending (condition, batch) pair is one item of a single DataLoader over all conditions, so
the workers corrupt (or decode) the next batches while the model runs on this one, across
conditions.  A condition's result does not depend on eps; it is recorded under every eps of the
run, so that each eps's table is complete.  The records' clean hits come from the run's own clean
pass (data without clean images, an ImageNet-C tree, repeats the condition's hits there).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import torch
from torch.utils.data import ConcatDataset, DataLoader

from ..shifts.catalog import Condition
from ..shifts.condition_images import CORRUPTION_FAILED
from .attack_guards import topk_hits
from .model_run import ModelRun
from .units import UnitRecords, batch_records


def evaluate_conditions(model: ModelRun, batches: list[int], look: Callable[[], None]) -> Iterator[UnitRecords]:
    """The records of ``model``'s pending condition units on ``batches``, unit by unit (``look``: share
    the cores between units)."""
    shift, conditions = model.plan.shift, model.plan.conditions
    plan = [(c, b) for c in conditions for b in batches if any(a == c.name for _, a in model.todo[b])]
    if shift is None or not plan:
        return
    if shift.has_clean_images:
        fill_clean_hits(model, sorted({b for _, b in plan}))
    position = {c.name: i for i, c in enumerate(conditions)}
    n = len(model.data.dataset)
    sampler = [[position[c.name] * n + i for i in model.data.batch_indices(model.batch_size, b)] for c, b in plan]
    shift.prepare(conditions)
    datasets = [shift.condition_dataset(model.data, c, model.config) for c in conditions]
    workers, pin = shift.loader_workers(model.plan.workers), model.device.type == "cuda"
    loader: DataLoader = DataLoader(ConcatDataset(datasets), batch_sampler=sampler, num_workers=workers, pin_memory=pin)
    for (condition, b), (x, y, norms) in zip(plan, loader):
        look()
        yield from condition_units(model, condition, datasets[position[condition.name]], b, x, y, norms)


def fill_clean_hits(model: ModelRun, batches: list[int]) -> None:
    """Clean top-1/top-5 hits of batches the clean pass did not see in this process (a resumed run)."""
    missing = [b for b in batches if b not in model.clean_hits]
    for b, idx, x, y in model.data.batches(model.batch_size, workers=model.plan.workers, only=missing):
        keep = y >= 0
        logits = model.logits(model.inputs(x[keep]), f"clean images (batch {b})")
        model.keep_clean_hits(b, idx[keep], logits, y[keep].to(model.device))


def skip_failed(model: ModelRun, condition: Condition, dataset, idx: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Name the examples of this unit that could not be read or corrupted; the mask of the others."""
    keep = y >= 0
    named = dataset if hasattr(dataset, "path_of") else model.data.dataset
    for i, label in zip(idx[~keep].tolist(), y[~keep].tolist()):
        name = named.path_of(i) if hasattr(named, "path_of") else f"{model.data.name} example {i}"
        why = "corruption failed" if label == CORRUPTION_FAILED else "unreadable"
        model.log.skipped.add(f"{name} ({condition.name}: {why})")
    return keep


def condition_units(model: ModelRun, condition: Condition, dataset, b: int, x, y, norms) -> Iterator[UnitRecords]:
    """One condition on one batch, recorded under every pending eps."""
    idx = torch.tensor(model.data.batch_indices(model.batch_size, b), dtype=torch.long)
    keep = skip_failed(model, condition, dataset, idx, y)
    idx, x, y, norms = idx[keep], x[keep], y[keep], norms[keep]
    if len(y) == 0:
        return
    tick = time.perf_counter()
    logits = model.logits(model.inputs(x), f"{condition.name} (batch {b})")
    hits = tuple(h.tolist() for h in topk_hits(logits, y.to(model.device)))
    clean = hits  # data without clean images repeats the condition's hits
    if model.plan.shift is not None and model.plan.shift.has_clean_images:
        clean = tuple([model.clean_hits[b][i][k] for i in idx.tolist()] for k in (0, 1))
    seconds = time.perf_counter() - tick  # the unit's own work: the pass and its hits, as before the records
    base = model.shared_fields(b, idx.tolist(), y.tolist(), clean)
    pred, sizes = logits.argmax(1).tolist(), tuple(norms.double().T.tolist())  # sizes: Linf, L2
    for eps in (e for e, unit in model.todo[b] if unit == condition.name):
        records = batch_records(base, eps, condition.name, hits, pred, sizes, (1.0, 0.0))
        yield UnitRecords(model.key(eps.text, condition.name, b), records, seconds=seconds)

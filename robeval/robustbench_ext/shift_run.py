"""One model's shifted conditions (ImageNet-C corruptions, generated or read from a tree).

Every pending (condition, batch) pair is one item of a single DataLoader over all conditions, so
the workers corrupt (or decode) the next batches while the model runs on this one, across
conditions.  Generated corruptions use at least one worker.  A condition's result does not depend
on eps; it is recorded under every eps of the run, so that each eps's table is complete.  The
records' clean hits come from the run's own clean pass (an ImageNet-C tree has no clean images:
there they repeat the condition's hits).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import torch
from torch.utils.data import ConcatDataset, DataLoader

from ..shifts.catalog import get_shift
from ..shifts.datasets import CORRUPTION_FAILED, Condition
from ..shifts.loading import condition_dataset
from .metrics import topk_hits

if TYPE_CHECKING:
    from .model_run import Deliver, ModelEvaluation


def run_conditions(ev: "ModelEvaluation", batches: list[int], deliver: "Deliver") -> None:
    plan = [(c, b) for c in ev.conditions for b in batches if any(a == c.name for _, a in ev.todo[b])]
    if not plan:
        return
    tree = get_shift(ev.config.shift).tree
    if not tree:
        fill_clean_hits(ev, sorted({b for _, b in plan}))
    position = {c.name: i for i, c in enumerate(ev.conditions)}
    n = len(ev.data.dataset)
    sampler = [[position[c.name] * n + i for i in ev.data.batch_indices(ev.batch_size, b)] for c, b in plan]
    workers = ev.config.workers if tree else max(1, ev.config.workers)
    if not tree and any(c.corruption == "glass_blur" for c in ev.conditions):
        warm_up_glass_blur()  # compiled once here, inherited by the forked workers
    datasets = [condition_dataset(ev.data, c, ev.config) for c in ev.conditions]
    loader = DataLoader(ConcatDataset(datasets), batch_sampler=sampler, num_workers=workers,
                        pin_memory=ev.device.type == "cuda")
    for (condition, b), (x, y, norms) in zip(plan, loader):
        ev.threads.look()
        condition_unit(ev, condition, datasets[position[condition.name]], b, x, y, norms, deliver, tree)


def warm_up_glass_blur() -> None:
    from ..shifts.corrupt import corrupt_tensor

    corrupt_tensor(torch.zeros(3, 32, 32), "glass_blur", 1, 0)


def fill_clean_hits(ev: "ModelEvaluation", batches: list[int]) -> None:
    """Clean top-1/top-5 hits of batches the clean pass did not see in this process (a resumed run)."""
    missing = [b for b in batches if b not in ev.clean_hits]
    for b, idx, x, y in ev.data.batches(ev.batch_size, workers=ev.config.workers, only=missing):
        keep = y >= 0
        hit1, hit5 = topk_hits(ev.logits(ev.inputs(x[keep]), f"clean images (batch {b})"), y[keep].to(ev.device))
        ev.clean_hits[b] = dict(zip(idx[keep].tolist(), zip(hit1.tolist(), hit5.tolist())))


def skip_failed(ev: "ModelEvaluation", condition: Condition, dataset, idx: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Name the examples of this unit that could not be read or corrupted; the mask of the others."""
    keep = y >= 0
    named = dataset if hasattr(dataset, "path_of") else ev.data.dataset
    for i, label in zip(idx[~keep].tolist(), y[~keep].tolist()):
        name = named.path_of(i) if hasattr(named, "path_of") else f"{ev.data.name} example {i}"
        why = "corruption failed" if label == CORRUPTION_FAILED else "unreadable"
        ev.outcome.skipped.append(f"{name} ({condition.name}: {why})")
    return keep


def condition_unit(ev: "ModelEvaluation", condition: Condition, dataset, b: int, x, y, norms, deliver: "Deliver",
                   tree: bool) -> None:
    from .model_run import add_records, new_columns

    idx = torch.tensor(ev.data.batch_indices(ev.batch_size, b), dtype=torch.long)
    keep = skip_failed(ev, condition, dataset, idx, y)
    idx, x, y, norms = idx[keep], x[keep], y[keep], norms[keep]
    if len(y) == 0:
        return
    tick = time.perf_counter()
    logits = ev.logits(ev.inputs(x), f"{condition.name} (batch {b})")
    hit1, hit5 = (h.tolist() for h in topk_hits(logits, y.to(ev.device)))
    clean = ev.clean_hits.get(b, {})
    clean1 = hit1 if tree else [clean[i][0] for i in idx.tolist()]
    clean5 = hit5 if tree else [clean[i][1] for i in idx.tolist()]
    seconds = time.perf_counter() - tick
    for eps, unit in ev.todo[b]:
        if unit != condition.name:
            continue
        columns = new_columns()
        add_records(columns, model=ev.job.name, batch=b, example=idx.tolist(), label=y.tolist(), clean_top1=clean1,
                    clean_top5=clean5, attack=condition.name, eps=eps.text, eps_value=eps.value, adv_top1=hit1,
                    adv_top5=hit5, adv_pred=logits.argmax(1).tolist(), linf=norms[:, 0].double().tolist(),
                    l2=norms[:, 1].double().tolist(), forward_passes=1.0, backward_passes=0.0)
        ev.outcome.time(f"{ev.job.name}|{eps.text}|{condition.name}", seconds)
        deliver((ev.job.name, eps.text, condition.name, b), seconds, columns, len(y))

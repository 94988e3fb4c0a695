"""One model's shifted conditions (ImageNet-C corruptions, generated or read from a tree).

Every pending (condition, batch) pair is one item of a single DataLoader over all conditions, so
the workers corrupt (or decode) the next batches while the model runs on this one, across
conditions.  A condition's result does not depend on eps; it is recorded under every eps of the
run, so that each eps's table is complete.  The records' clean hits come from the run's own clean
pass (data without clean images, an ImageNet-C tree, repeats the condition's hits there).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.utils.data import ConcatDataset, DataLoader

from ..data.examples import EvalData
from ..options import EvalConfig
from ..shifts.catalog import Condition
from ..shifts.condition_images import CORRUPTION_FAILED
from ..shifts.kinds import ShiftKind
from .attack_guards import topk_hits
from .unit_records import BatchOutcome, Deliver, add_records, new_columns


@dataclass
class ConditionContext:
    """What a model's shifted conditions need from its run, and nothing more."""

    model: str  # the name its records carry
    kind: ShiftKind
    conditions: list[Condition]
    data: EvalData  # read for the model
    batch_size: int
    config: EvalConfig  # the run's configuration (seed, data: what the kind's datasets read)
    workers: int  # DataLoader worker processes
    device: torch.device
    todo: dict[int, list]  # batch -> its pending (eps, unit)
    clean_hits: dict[
        int, dict[int, tuple[bool, bool]]
    ]  # batch -> example -> clean top-1/top-5 (filled here if missing)
    logits: Callable[[torch.Tensor, str], torch.Tensor]  # the model's checked logits on images as the data gives them
    look: Callable[[], None]  # share the cores between units
    outcome: BatchOutcome


def run_conditions(ctx: ConditionContext, batches: list[int], deliver: Deliver) -> None:
    plan = [(c, b) for c in ctx.conditions for b in batches if any(a == c.name for _, a in ctx.todo[b])]
    if not plan:
        return
    if ctx.kind.has_clean_images:
        fill_clean_hits(ctx, sorted({b for _, b in plan}))
    position = {c.name: i for i, c in enumerate(ctx.conditions)}
    n = len(ctx.data.dataset)
    sampler = [[position[c.name] * n + i for i in ctx.data.batch_indices(ctx.batch_size, b)] for c, b in plan]
    ctx.kind.prepare(ctx.conditions)
    datasets = [ctx.kind.condition_dataset(ctx.data, c, ctx.config) for c in ctx.conditions]
    loader: DataLoader = DataLoader(
        ConcatDataset(datasets),
        batch_sampler=sampler,
        num_workers=ctx.kind.loader_workers(ctx.workers),
        pin_memory=ctx.device.type == "cuda",
    )
    for (condition, b), (x, y, norms) in zip(plan, loader):
        ctx.look()
        condition_unit(ctx, condition, datasets[position[condition.name]], b, x, y, norms, deliver)


def fill_clean_hits(ctx: ConditionContext, batches: list[int]) -> None:
    """Clean top-1/top-5 hits of batches the clean pass did not see in this process (a resumed run)."""
    missing = [b for b in batches if b not in ctx.clean_hits]
    for b, idx, x, y in ctx.data.batches(ctx.batch_size, workers=ctx.workers, only=missing):
        keep = y >= 0
        hit1, hit5 = topk_hits(ctx.logits(x[keep], f"clean images (batch {b})"), y[keep].to(ctx.device))
        ctx.clean_hits[b] = dict(zip(idx[keep].tolist(), zip(hit1.tolist(), hit5.tolist())))


def skip_failed(
    ctx: ConditionContext, condition: Condition, dataset, idx: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """Name the examples of this unit that could not be read or corrupted; the mask of the others."""
    keep = y >= 0
    named = dataset if hasattr(dataset, "path_of") else ctx.data.dataset
    for i, label in zip(idx[~keep].tolist(), y[~keep].tolist()):
        name = named.path_of(i) if hasattr(named, "path_of") else f"{ctx.data.name} example {i}"
        why = "corruption failed" if label == CORRUPTION_FAILED else "unreadable"
        ctx.outcome.skipped.append(f"{name} ({condition.name}: {why})")
    return keep


def condition_unit(ctx: ConditionContext, condition: Condition, dataset, b: int, x, y, norms, deliver: Deliver) -> None:
    """One condition on one batch, recorded under every pending eps."""
    idx = torch.tensor(ctx.data.batch_indices(ctx.batch_size, b), dtype=torch.long)
    keep = skip_failed(ctx, condition, dataset, idx, y)
    idx, x, y, norms = idx[keep], x[keep], y[keep], norms[keep]
    if len(y) == 0:
        return
    tick = time.perf_counter()
    logits = ctx.logits(x, f"{condition.name} (batch {b})")
    hit1, hit5 = (h.tolist() for h in topk_hits(logits, y.to(ctx.device)))
    clean = ctx.clean_hits.get(b, {})
    clean1 = [clean[i][0] for i in idx.tolist()] if ctx.kind.has_clean_images else hit1
    clean5 = [clean[i][1] for i in idx.tolist()] if ctx.kind.has_clean_images else hit5
    seconds = time.perf_counter() - tick
    for eps, unit in ctx.todo[b]:
        if unit != condition.name:
            continue
        columns = new_columns()
        add_records(
            columns,
            model=ctx.model,
            batch=b,
            example=idx.tolist(),
            label=y.tolist(),
            clean_top1=clean1,
            clean_top5=clean5,
            attack=condition.name,
            eps=eps.text,
            eps_value=eps.value,
            adv_top1=hit1,
            adv_top5=hit5,
            adv_pred=logits.argmax(1).tolist(),
            linf=norms[:, 0].double().tolist(),
            l2=norms[:, 1].double().tolist(),
            forward_passes=1.0,
            backward_passes=0.0,
        )
        ctx.outcome.time(f"{ctx.model}|{eps.text}|{condition.name}", seconds)
        deliver((ctx.model, eps.text, condition.name, b), seconds, columns, len(y))

"""Several workers on one evaluation through torchrun + torch.distributed (docs/distributed.md, section
How the work is split).  What a rank learnt (skipped files, checks, timings, an error) is gathered
with it, so no rank waits forever for one that failed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist


@dataclass
class DistContext:
    rank: int = 0
    world: int = 1

    @property
    def active(self) -> bool:
        return self.world > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def broadcast(self, obj: Any) -> Any:
        """``obj`` from rank 0 on every rank."""
        if not self.active:
            return obj
        box = [obj]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def gather(self, obj: Any) -> list[Any]:
        """Every rank's ``obj``, in rank order, on every rank."""
        if not self.active:
            return [obj]
        out: list[Any] = [None] * self.world
        dist.all_gather_object(out, obj)
        return out


SINGLE = DistContext()
LAUNCH_STATE = "ROBEVAL_LAUNCH_STATE"  # env: where rank 0 names its run for ``robeval run --nproc``'s launcher


def announce_run(run_id: str, ctx: DistContext) -> None:
    """Rank 0 of workers that ``robeval run --nproc`` started tells the launcher which run it evaluates,
    so that the launcher can mark it interrupted and name the resume command when it stops the workers."""
    path = os.environ.get(LAUNCH_STATE)
    if path and ctx.is_main:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(run_id)


def launched_by_torchrun() -> bool:
    return int(os.environ.get("WORLD_SIZE", "1")) > 1 and "RANK" in os.environ


def init_from_env(device: str = "auto") -> DistContext:
    """Join the process group torchrun set up (or return the single-process context)."""
    if not launched_by_torchrun():
        return SINGLE
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    use_cuda = torch.cuda.is_available() and device != "cpu"
    if not dist.is_initialized():
        if use_cuda:
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group(backend="nccl" if use_cuda else "gloo")
    return DistContext(rank, world)


def shutdown(ctx: DistContext) -> None:
    if ctx.active and dist.is_initialized():
        dist.destroy_process_group()

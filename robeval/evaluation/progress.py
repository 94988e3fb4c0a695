"""What a run tells its progress display: one bar per model x eps x attack (one per model for all its
shifted conditions), advanced unit by unit and, for long attacks, inside a unit by the model passes
spent against the attack's budget.

In a distributed run rank 0 shows its own share of the batches (the others run alike), so its bars
end full instead of at 1/N.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.defaults import CLEAN
from ..core.records import audited_stage

Key = tuple[str, ...]

PARTIAL_EVERY_SECONDS = 0.5  # in-unit progress is reported at most this often


@dataclass
class Bar:
    key: Key  # what advances it: (model, eps, attack), or (model, "shift") for every shifted condition
    label: str
    total: int  # images
    done: int = 0  # images finished before this process started (a resumed run)


class Reporter:
    """What a run tells its display; this one shows nothing (a worker's, or a run without bars):
    robeval.report.terminal.RichReporter draws them."""

    def start(self, bars: list[Bar], model: str, position: tuple[int, int]) -> None: ...
    def advance(self, key: Key, images: int, seconds: float | None = None) -> None: ...
    def partial(self, key: Key, images: float) -> None: ...
    def note(self, text: str) -> None: ...
    def stop(self) -> None: ...


def unit_key(model: str, eps: str, unit: str, conditions: set[str]) -> Key:
    return (model, "shift") if unit in conditions else (model, eps, unit)


def model_bars(ev: Any, share: list[int], done: set) -> list[Bar]:
    """The bars of one model's (member's) evaluation ``ev`` over the batches ``share`` (this process's), with what
    ``done`` (stored units) already holds; labels lead with the attack (the model heads the display)."""
    bars: dict[Key, Bar] = {}
    for eps in ev.config.eps:
        for unit in ev.units:
            if unit == CLEAN or audited_stage(unit) is not None:  # an audit unit: a sample, no bar of its own
                continue
            key = unit_key(ev.job.name, eps.text, unit, ev.condition_names)
            shift = f"{ev.config.shift}: {len(ev.condition_names)} conditions"
            bar = bars.setdefault(key, Bar(key, shift if len(key) == 2 else f"{unit} eps={eps.text}", 0))
            for b in share:
                n = len(ev.data.batch_indices(ev.batch_size, b))
                bar.total += n
                bar.done += n if ev.key(eps.text, unit, b) in done else 0
    return list(bars.values())


def throttled(report: Callable[[float], None]) -> Callable[[float], None]:
    """``report`` called at most every PARTIAL_EVERY_SECONDS."""
    last = [0.0]

    def call(value: float) -> None:
        now = time.monotonic()
        if now - last[0] >= PARTIAL_EVERY_SECONDS:
            last[0] = now
            report(value)

    return call

"""Side-by-side timing helpers for the benchmarks: interleaved repeats, median ratios."""

from __future__ import annotations

import statistics
import time
from typing import Callable


def interleaved(contenders: dict[str, Callable[[], object]], repeats: int = 5, warmup: int = 1) -> dict[str, float]:
    """Median wall time of each contender, running them in turn so that machine noise hits all alike."""
    for fn in contenders.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, fn in contenders.items():
            tick = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - tick)
    return {name: statistics.median(ts) for name, ts in times.items()}

"""Side-by-side timing helpers for the benchmarks: interleaved repeats, median and paired ratios.

This machine is shared and noisy (+-15% between identical calls).  Contenders therefore run in
turn within each repeat, in alternating order (A B, then B A) so that drift hits all alike, and
ratios are taken per repeat (paired) before the median: a slow spell that lasts one repeat
inflates both sides of that repeat's ratio instead of one side of the comparison.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def interleaved_samples(contenders: dict[str, Callable[[], object]], repeats: int = 5,
                        warmup: int = 1) -> dict[str, list[float]]:
    """Wall times of every repeat of each contender, run in turn with alternating order."""
    for fn in contenders.values():
        for _ in range(warmup):
            fn()
    names = list(contenders)
    times: dict[str, list[float]] = {name: [] for name in names}
    for repeat in range(repeats):
        for name in names if repeat % 2 == 0 else reversed(names):
            tick = time.perf_counter()
            contenders[name]()
            times[name].append(time.perf_counter() - tick)
    return times


def interleaved(contenders: dict[str, Callable[[], object]], repeats: int = 5, warmup: int = 1) -> dict[str, float]:
    """Median wall time of each contender (see :func:`interleaved_samples`)."""
    return {name: statistics.median(ts) for name, ts in interleaved_samples(contenders, repeats, warmup).items()}


def paired_ratio(samples: dict[str, list[float]], numerator: str, denominator: str) -> tuple[float, float, float]:
    """Median and quartiles of the per-repeat ratio ``numerator / denominator``."""
    ratios = sorted(a / b for a, b in zip(samples[numerator], samples[denominator]))
    if len(ratios) < 4:
        return statistics.median(ratios), ratios[0], ratios[-1]
    q1, median, q3 = statistics.quantiles(ratios, n=4)
    return median, q1, q3

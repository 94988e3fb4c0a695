#!/usr/bin/env python
"""Benchmark 2: what the engine costs on top of the attack itself.

robeval's engine running PGD-20 on the digits demo (all 449 test images, batch 128) against
hand-written loops that load the same model and data and call the same attack on the same batches
(target: at most 1.05x).  Two hand-written loops:

* "same numbers": what a script needs to fill the paper's table row -- a clean pass for clean
  accuracy, the attack, and top-1/top-5 of both.  This is the comparison the target applies to:
  the engine computes exactly these numbers.
* "bare": the attack and adversarial top-1 only, printed so the cost of the clean row is visible.

On top of these the engine does the per-model soundness checks (16 examples), the bounds check of
every adversarial batch, per-example records, seeding and the summary; "engine + store" also writes
every unit to the SQLite results store, as ``robeval run`` does.  Ratios are the median of
per-repeat ratios (contenders interleaved, order alternating; see _timing.py).  Because the attack's
own time varies by several percent between identical calls on this machine, the script also times
every attack call inside each contender (the engine's through a timing wrapper around its
``craft``) and prints the time spent outside them: the ratio built from those parts
(median attack time + each contender's median time outside it) is the engine's overhead without
the attack's noise.

    .venv/bin/python benchmarks/engine_overhead.py [--repeats 11] [--eps 2/255,4/255,8/255,16/255]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import interleaved_samples, paired_ratio  # noqa: E402

import robeval  # noqa: E402
import robeval.evaluation.units as engine_module  # noqa: E402  (where the engine calls attacks)
from robeval.api import evaluate_full  # noqa: E402
from robeval.attacks import create  # noqa: E402
from robeval.core.eps import parse_one  # noqa: E402
from robeval.data.digits import digits_split  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--threads", type=int, default=1, help="1 (default) leaves the second core to the rest of the machine; the spread is printed")
    parser.add_argument("--eps", default="8/255", help="comma list; more eps = more work per fixed cost")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    eps_values = [parse_one(e).value for e in args.eps.split(",")]
    store_dir = Path(tempfile.mkdtemp(prefix="robeval-engine-"))

    in_attack = [0.0]  # seconds spent inside attack calls by the contender running now

    def timed_attack(call, *a, **k):
        tick = time.perf_counter()
        try:
            return call(*a, **k)
        finally:
            in_attack[0] += time.perf_counter() - tick

    engine_module.craft = functools.partial(timed_attack, engine_module.craft)
    outside: dict[str, list[float]] = {}

    def measured(name: str, body):
        """``body`` timed as a whole and inside its attack calls; the rest goes to ``outside[name]``."""
        def run() -> None:
            in_attack[0] = 0.0
            tick = time.perf_counter()
            body()
            outside.setdefault(name, []).append(time.perf_counter() - tick - in_attack[0])
        return run

    def hand_written(clean_and_top5: bool):
        def loop() -> float:
            images, labels = (torch.from_numpy(a) for a in digits_split("test"))  # a script loads its data
            model = robeval.load_model("digits-deit")  # ... and its model
            hits = torch.zeros(4)
            for eps in eps_values:
                attack = create("pgd", model, eps=eps)
                for start in range(0, len(labels), 128):
                    x, y = images[start:start + 128], labels[start:start + 128]
                    if clean_and_top5:
                        with torch.no_grad():
                            top = model(x).topk(5, 1).indices
                        hits[2] += (top[:, 0] == y).sum()
                        hits[3] += (top == y[:, None]).any(1).sum()
                    x_adv = timed_attack(attack, x, y, seed=start)
                    with torch.no_grad():
                        top = model(x_adv).topk(5 if clean_and_top5 else 1, 1).indices
                    hits[0] += (top[:, 0] == y).sum()
                    hits[1] += (top == y[:, None]).any(1).sum()
            return float(hits[0]) / len(labels)
        return loop

    def engine(store: bool):
        def run() -> float:
            res = evaluate_full(models="digits-deit", eps=args.eps, attacks="pgd", n_examples=449, batch_size=128,
                                store=store_dir / "store.sqlite" if store else None)
            return float(res.summary["top1"].iloc[0])
        return run

    bodies = {"hand-written, bare": hand_written(False), "hand-written, same numbers": hand_written(True),
              "robeval engine": engine(False), "robeval engine + store": engine(True)}
    samples = interleaved_samples({name: measured(name, body) for name, body in bodies.items()}, repeats=args.repeats)
    print(f"PGD-20 on 449 digits images at eps {args.eps}, batch 128, {args.threads} thread(s), {args.repeats} repeats")
    print(f"  {'':28s} {'whole run':>10s} {'outside the attack calls':>26s}")
    for name, ts in samples.items():
        print(f"  {name:28s} {statistics.median(ts):8.3f} s {1000 * statistics.median(outside[name][1:]):21.1f} ms")
    print("  engine / hand-written: median of per-repeat ratios [quartiles]:")
    for engine_name in ("robeval engine", "robeval engine + store"):
        for hand_name in ("hand-written, same numbers", "hand-written, bare"):
            median, q1, q3 = paired_ratio(samples, engine_name, hand_name)
            target = "  (target <= 1.05x)" if hand_name.endswith("same numbers") else ""
            print(f"    {engine_name:22s} / {hand_name:26s} {median:.3f}x [{q1:.3f}, {q3:.3f}]{target}")
    # The attack's own time is the same work for every contender; only the time outside it differs.
    spread = [t - o for name in samples for t, o in zip(samples[name], outside[name][1:])]
    attack_time = statistics.median(spread)
    q1, _, q3 = statistics.quantiles(spread, n=4)
    print(f"  from the parts (attack calls {attack_time:.3f} s median, interquartile range {100 * (q3 - q1) / attack_time:.1f}% "
          f"of it, the same work in every contender):")
    for engine_name in ("robeval engine", "robeval engine + store"):
        for hand_name in ("hand-written, same numbers", "hand-written, bare"):
            e, h = (statistics.median(outside[n][1:]) for n in (engine_name, hand_name))
            print(f"    {engine_name:22s} / {hand_name:26s} {(attack_time + e) / (attack_time + h):.3f}x")


if __name__ == "__main__":
    main()

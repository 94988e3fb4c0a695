#!/usr/bin/env python
"""Benchmark 2: what the engine costs on top of the attack itself.

robeval's engine running PGD-20 on the digits demo (all 449 test images, batch 128) against a
minimal hand-written loop that calls the same attack on the same batches and counts top-1/top-5
(target: at most 1.05x).  The engine's extra work: the shared clean pass, the bounds check,
per-example records, seeding.

    .venv/bin/python benchmarks/engine_overhead.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import interleaved  # noqa: E402

import robeval  # noqa: E402
from robeval.api import evaluate_full  # noqa: E402
from robeval.attacks import create  # noqa: E402
from robeval.eps import parse_one  # noqa: E402
from robeval.robustbench_ext.data import digits_split  # noqa: E402



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--eps", default="8/255", help="comma list; more eps = more work per fixed cost")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    images, labels = (torch.from_numpy(a) for a in digits_split("test"))
    eps_values = [parse_one(e).value for e in args.eps.split(",")]

    def hand_written() -> float:
        model = robeval.load_model("digits-deit")  # a script loads its model too
        hits = 0
        for eps in eps_values:
            attack = create("pgd", model, eps=eps)
            for start in range(0, len(labels), 128):
                x, y = images[start:start + 128], labels[start:start + 128]
                x_adv = attack(x, y, seed=start)
                with torch.no_grad():
                    hits += int((model(x_adv).argmax(1) == y).sum())
        return hits / len(labels)

    def engine() -> float:
        res = evaluate_full(models="digits-deit", eps=args.eps, attacks="pgd", n_examples=449, batch_size=128)
        return float(res.summary["top1"].iloc[0])

    times = interleaved({"hand-written loop": hand_written, "robeval engine": engine}, repeats=args.repeats)
    print(f"PGD-20 on 449 digits images at eps {args.eps}, batch 128, median of {args.repeats}")
    for name, t in times.items():
        print(f"  {name:18s} {t:7.3f} s")
    print(f"  engine / hand-written: {times['robeval engine'] / times['hand-written loop']:.3f}x  (target <= 1.05x)")


if __name__ == "__main__":
    main()

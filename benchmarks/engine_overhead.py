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
per-repeat ratios (contenders interleaved, order alternating; see _timing.py).

    .venv/bin/python benchmarks/engine_overhead.py [--repeats 11] [--eps 2/255,4/255,8/255,16/255]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import interleaved_samples, paired_ratio  # noqa: E402

import robeval  # noqa: E402
from robeval.api import evaluate_full  # noqa: E402
from robeval.attacks import create  # noqa: E402
from robeval.eps import parse_one  # noqa: E402
from robeval.robustbench_ext.data import digits_split  # noqa: E402



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--eps", default="8/255", help="comma list; more eps = more work per fixed cost")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    eps_values = [parse_one(e).value for e in args.eps.split(",")]
    store_dir = Path(tempfile.mkdtemp(prefix="robeval-engine-"))

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
                    x_adv = attack(x, y, seed=start)
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

    contenders = {"hand-written, bare": hand_written(False), "hand-written, same numbers": hand_written(True),
                  "robeval engine": engine(False), "robeval engine + store": engine(True)}
    samples = interleaved_samples(contenders, repeats=args.repeats)
    print(f"PGD-20 on 449 digits images at eps {args.eps}, batch 128, {args.threads} threads, {args.repeats} repeats")
    for name, ts in samples.items():
        print(f"  {name:28s} {statistics.median(ts):7.3f} s (median)")
    print("  ratio (median of per-repeat ratios, [quartiles]):")
    for engine_name in ("robeval engine", "robeval engine + store"):
        for hand_name in ("hand-written, same numbers", "hand-written, bare"):
            median, q1, q3 = paired_ratio(samples, engine_name, hand_name)
            target = "  (target <= 1.05x)" if hand_name.endswith("same numbers") else ""
            print(f"    {engine_name:22s} / {hand_name:26s} {median:.3f}x [{q1:.3f}, {q3:.3f}]{target}")


if __name__ == "__main__":
    main()

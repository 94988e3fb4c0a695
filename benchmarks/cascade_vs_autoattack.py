#!/usr/bin/env python
"""robeval's --cascade against AutoAttack's own run_standard_evaluation, side by side in one run.

Same model (the embedded digits-deit by default), same images (the digits demo's first N balanced
test examples), same eps, seed and batch (all N in one), the standard version's four attacks at
their standard settings (APGD-CE 100 iterations, APGD-T and FAB-T 9 targets, Square 5000 queries),
one thread each.  robeval runs through its engine (``evaluate_full(..., cascade=True)``: counted
passes, records, the eps check); AutoAttack through its own entry point.  Prints both wall times,
their ratio (repeats interleaved, median of the paired ratios), both robust accuracies and how many
examples' outcomes differ.

    .venv/bin/python benchmarks/cascade_vs_autoattack.py [--n 100] [--eps 8/255] [--repeats 3] [--device cpu]
        [--compile auto|on|off]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from pyautoattack import AutoAttack

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import paired_ratio  # noqa: E402

import robeval  # noqa: E402
from robeval.api import evaluate_full  # noqa: E402
from robeval.core.eps import parse_one  # noqa: E402
from robeval.data.digits import digits_split  # noqa: E402

AA = ["apgd-ce", "apgd-t", "fab-t", "square"]


def robeval_cascade(args) -> tuple[float, set[int]]:
    tick = time.perf_counter()
    result = evaluate_full(models=args.model, eps=args.eps, n_examples=args.n, batch_size=args.n, attacks=",".join(AA),
                           cascade=True, threads=args.threads, device=args.device, seed=0, compile=args.compile)
    seconds = time.perf_counter() - tick
    rec = result.records[result.records["attack"] == AA[-1]]
    return seconds, set(rec.loc[rec["adv_top1"].astype(bool), "example"].tolist())


def autoattack(args, model, x, y, examples) -> tuple[float, set[int]]:
    tick = time.perf_counter()
    adversary = AutoAttack(model, eps=parse_one(args.eps).value, norm="Linf", seed=0, version="standard",
                           device=args.device)
    adversary.verbose = False
    x_adv, _ = adversary.run_standard_evaluation(x, y, batch_size=args.n)
    seconds = time.perf_counter() - tick
    with torch.no_grad():
        robust = (model(x_adv).argmax(1) == y).tolist()
    return seconds, {e for e, ok in zip(examples, robust) if ok}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="digits-deit")
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--eps", default="8/255")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--compile", default="auto", help="robeval's --compile (compile time counts in its time)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    probe = evaluate_full(models=args.model, eps=args.eps, n_examples=args.n, attacks="none", device=args.device)
    examples = sorted(probe.records["example"].tolist())
    images, labels = digits_split("test")
    x = torch.from_numpy(images[examples]).to(args.device)
    y = torch.from_numpy(labels[examples]).to(args.device)
    model = robeval.load_model(args.model, device=torch.device(args.device))
    times: dict[str, list[float]] = {"robeval": [], "autoattack": []}
    results: dict[str, set[int]] = {}
    for repeat in range(args.repeats):
        order = ["robeval", "autoattack"] if repeat % 2 == 0 else ["autoattack", "robeval"]
        for name in order:
            seconds, robust = robeval_cascade(args) if name == "robeval" else autoattack(args, model, x, y, examples)
            times[name].append(seconds)
            results[name] = robust
    ratio, q1, q3 = paired_ratio(times, "robeval", "autoattack")
    print(f"AutoAttack standard (apgd-ce, apgd-t, fab-t, square) on {args.n} digits images, eps {args.eps}, "
          f"{args.threads} thread(s), {args.device}, robeval --compile {args.compile}, {args.repeats} interleaved repeats")
    for name in times:
        print(f"  {name:11s} median {sorted(times[name])[len(times[name]) // 2]:7.2f} s   "
              f"robust top-1 {100 * len(results[name]) / args.n:6.2f}%")
    print(f"  robeval --cascade time / AutoAttack's time: {ratio:.2f}x (quartiles {q1:.2f}-{q3:.2f})")
    print(f"  examples robust in one and not the other: {len(results['robeval'] ^ results['autoattack'])}")


if __name__ == "__main__":
    main()

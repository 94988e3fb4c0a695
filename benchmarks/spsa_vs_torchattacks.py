#!/usr/bin/env python
"""SPSA: robeval's batched implementation against torchattacks' SPSA at equal evaluations per step.

Both count ``samples`` as +/- pairs (robeval since issue 31, torchattacks' ``nb_sample`` from
advertorch): 128 pairs = 256 model evaluations per example and step.  Same models (both demo models),
same 100 demo digits (class-balanced), same eps, iterations (40), learning rate (0.01) and delta
(0.01), true labels, images clipped to [0, 1].  robeval runs its ``standard`` procedure (from the
image, best iterate, early stop); with ``--authors`` it also runs the procedure ``--protocol
nielsen2024`` gives it (the authors' cleverhans SPSA), for its robust top-1 only.

Timing: the machine may be shared, so the two sides run in turn for each (model, seed), in
alternating order, and the ratio is taken per pair (benchmarks/_timing.py) before the median and the
spread over all pairs.  Wall time and this process's CPU time are both shown; on a loaded machine the
CPU time ratio is the steadier one.  Both sides call the model through one counting wrapper
(robeval.evaluation.attack_guards.PassCounter), so the forward and backward passes each made are
counted alike.

    .venv/bin/python benchmarks/spsa_vs_torchattacks.py [--n 100] [--seeds 3] [--eps 8/255] [--authors]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torchattacks

import robeval
from robeval.attacks import create
from robeval.core.eps import parse_one
from robeval.data.digits import digits_split
from robeval.data.subsets import balanced_subset
from robeval.evaluation.attack_guards import PassCounter
from robeval.evaluation.protocols import PROTOCOLS

MODELS = ("digits-deit", "digits-deit-elliptical")


def robust_top1(model, x_adv, y) -> float:
    with torch.inference_mode():
        return 100.0 * float((model(x_adv).argmax(1) == y).float().mean())


def timed(counted: PassCounter, call) -> dict:
    """Run ``call`` once: its points, wall and CPU seconds, and the passes it sent through ``counted``."""
    counted.reset()
    wall, cpu = time.perf_counter(), time.process_time()
    x_adv = call()
    return dict(x_adv=x_adv, wall=time.perf_counter() - wall, cpu=time.process_time() - cpu,
                forward=counted.forward_images, backward=counted.backward_images)


def contenders(counted, args, eps, x, y, idx, seed):
    """The calls of one (model, seed): robeval's standard SPSA and torchattacks' at the same pairs."""
    ours = create("spsa", counted, eps=eps, seed=seed, iterations=args.iterations, samples=args.samples, lr=0.01,
                  delta=0.01)
    theirs = torchattacks.SPSA(counted, eps=eps, delta=0.01, lr=0.01, nb_iter=args.iterations,
                               nb_sample=args.samples, max_batch_size=64)

    def call_theirs():
        torch.manual_seed(seed)  # torchattacks draws from the global RNG
        return theirs(x, y)

    return {"robeval": lambda: ours(x, y, examples=idx), "torchattacks": call_theirs}  # per-example draws


def authors(counted, args, eps, x, y, idx, seed) -> dict:
    """robeval's SPSA with the settings ``--protocol nielsen2024`` gives it (here on [0,1] pixels)."""
    settings = {**PROTOCOLS.require("nielsen2024").settings_for("spsa"), "iterations": args.iterations,
                "samples": args.samples}
    attack = create("spsa", counted, eps=eps, seed=seed, **settings)
    return timed(counted, lambda: attack(x, y, examples=idx))


def run_model(name: str, args, eps, x, y, idx) -> list[dict]:
    model = robeval.load_model(name).eval()
    counted = PassCounter(model)
    rows = []
    for k, seed in enumerate(range(args.seeds)):
        calls = contenders(counted, args, eps, x, y, idx, seed)
        order = list(calls) if k % 2 == 0 else list(reversed(calls))
        row = {"model": name, "seed": seed, "clean": robust_top1(model, x, y)}
        for side in order:
            row[side] = timed(counted, calls[side])
            row[side]["robust"] = robust_top1(model, row[side].pop("x_adv"), y)
        if args.authors:
            row["authors"] = authors(counted, args, eps, x, y, idx, seed)
            row["authors"]["robust"] = robust_top1(model, row["authors"].pop("x_adv"), y)
        print_row(row, args.n)
        rows.append(row)
    return rows


def print_row(row: dict, n: int) -> None:
    print(f"{row['model']:24s} seed {row['seed']}  clean {row['clean']:5.1f}%", flush=True)
    for side in ("robeval", "torchattacks", "authors"):
        if side in row:
            r = row[side]
            print(f"    {side:13s} robust top-1 {r['robust']:5.1f}%   wall {r['wall']:7.1f} s   cpu {r['cpu']:7.1f} s"
                  f"   forward passes {r['forward']:>10,} ({r['forward'] / n:,.0f} per example)"
                  f"   backward {r['backward']}", flush=True)


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.2f}x (min {min(values):.2f}x, max {max(values):.2f}x, {len(values)} pairs)"


def summary(rows: list[dict]) -> None:
    print("\nSummary (torchattacks / robeval, per (model, seed) pair)")
    for clock in ("wall", "cpu"):
        ratios = [r["torchattacks"][clock] / r["robeval"][clock] for r in rows]
        print(f"  time ratio ({clock}):                 {spread(ratios)}")
    per_eval = [(r["torchattacks"]["cpu"] / r["torchattacks"]["forward"]) / (r["robeval"]["cpu"] / r["robeval"]["forward"])
                for r in rows]
    print(f"  cpu time per forward pass ratio:       {spread(per_eval)}")
    for name in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == name]
        gaps = [r["robeval"]["robust"] - r["torchattacks"]["robust"] for r in mine]
        line = "  ".join(f"{side} {statistics.mean(r[side]['robust'] for r in mine):5.1f}%"
                         for side in ("robeval", "torchattacks", "authors") if side in mine[0])
        print(f"  {name:24s} mean robust top-1: {line}   robeval - torchattacks per seed: "
              + ", ".join(f"{g:+.1f}" for g in gaps))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--eps", default="8/255")
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--samples", type=int, default=128, help="+/- pairs per step, both sides")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--authors", action="store_true", help="also run the nielsen2024 procedure (robust top-1)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    eps = parse_one(args.eps).value
    images, labels = digits_split("test")
    idx = balanced_subset(labels.tolist(), args.n)
    x, y = torch.from_numpy(images[idx]), torch.from_numpy(labels[idx])
    print(f"SPSA on {args.n} demo digits, eps {args.eps}, {args.iterations} iterations x {args.samples} +/- pairs "
          f"({2 * args.samples} evaluations per example and step), {args.threads} threads")
    rows = [row for name in args.models.split(",") for row in run_model(name, args, eps, x, y, idx)]
    summary(rows)


if __name__ == "__main__":
    main()

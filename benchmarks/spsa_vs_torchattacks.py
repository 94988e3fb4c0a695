#!/usr/bin/env python
"""SPSA: robeval's batched implementation against torchattacks' SPSA, side by side in one run.

Same model (the embedded digits-deit), same 32 digits test images, same eps, iterations (40),
samples (128), learning rate (0.01) and delta (0.01).  Prints wall time of each, the ratio,
robust top-1 of each, and the image forward passes each spent.

Note what "128 samples" means: robeval follows cleverhans' SPSA (the one the Elliptical-Attention
paper ran): 128 evaluated inputs per step = 64 +/- pairs.  torchattacks' ``nb_sample=128`` means 128
pairs = 256 evaluated inputs.  The script therefore prints two ratios: wall time at the same
settings (what a user switching tools gets) and time per image forward pass (the engineering
difference alone).

    .venv/bin/python benchmarks/spsa_vs_torchattacks.py [--n 32] [--eps 8/255] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch
import torchattacks

import robeval
from robeval.attacks import create
from robeval.data.digits import digits_split
from robeval.data.subsets import balanced_subset
from robeval.eps import parse_one
from robeval.evaluation.attack_guards import PassCounter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import interleaved_samples, paired_ratio  # noqa: E402


def robust_top1(model, x_adv, y) -> float:
    with torch.inference_mode():
        return 100.0 * float((model(x_adv).argmax(1) == y).float().mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=32)
    parser.add_argument("--eps", default="8/255")
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--samples", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    eps = parse_one(args.eps).value

    model = robeval.load_model("digits-deit")
    images, labels = digits_split("test")
    idx = balanced_subset(labels.tolist(), args.n)
    x, y = torch.from_numpy(images[idx]), torch.from_numpy(labels[idx])

    counted = PassCounter(model)
    ours = create("spsa", counted, eps=eps, iterations=args.iterations, samples=args.samples, lr=0.01, delta=0.01)
    theirs = torchattacks.SPSA(counted, eps=eps, delta=0.01, lr=0.01, nb_iter=args.iterations, nb_sample=args.samples)
    out: dict[str, torch.Tensor] = {}
    passes: dict[str, int] = {}

    def run(name: str):
        def call() -> None:
            counted.reset()
            torch.manual_seed(0)
            out[name] = ours(x, y, seed=0, examples=idx) if name == "robeval" else theirs(x, y)  # per-example draws
            passes[name] = counted.forward_images

        return call

    samples = interleaved_samples({"robeval": run("robeval"), "torchattacks": run("torchattacks")},
                                  repeats=args.repeats, warmup=0)
    ratio, q1, q3 = paired_ratio(samples, "torchattacks", "robeval")
    t_ours, t_theirs = (statistics.median(samples[k]) for k in ("robeval", "torchattacks"))
    x_ours, x_theirs = out["robeval"], out["torchattacks"]
    passes_ours, passes_theirs = passes["robeval"], passes["torchattacks"]

    clean = robust_top1(model, x, y)
    print(f"SPSA on {args.n} digits images, eps {args.eps}, {args.iterations} iterations x {args.samples} samples")
    print(f"  clean top-1                {clean:6.2f}%")
    print(f"  robeval      {t_ours:8.2f} s   robust top-1 {robust_top1(model, x_ours, y):6.2f}%   image forwards {passes_ours:,}")
    print(f"  torchattacks {t_theirs:8.2f} s   robust top-1 {robust_top1(model, x_theirs, y):6.2f}%   image forwards {passes_theirs:,}")
    print(f"  speed-up at the same settings (torchattacks time / robeval time, median of {args.repeats} interleaved "
          f"repeats): {ratio:.2f}x (quartiles {q1:.2f}-{q3:.2f})")
    print(f"  speed-up per image forward pass: {(t_theirs / passes_theirs) / (t_ours / passes_ours):.2f}x")


if __name__ == "__main__":
    main()

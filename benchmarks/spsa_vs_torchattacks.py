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

    .venv/bin/python benchmarks/spsa_vs_torchattacks.py [--n 32] [--eps 8/255] [--repeats 1]
"""

from __future__ import annotations

import argparse
import time

import torch
import torchattacks

import robeval
from robeval.attacks import create
from robeval.eps import parse_one
from robeval.data.digits import digits_split
from robeval.data.subsets import balanced_subset
from robeval.evaluation.attack_calls import PassCounter


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
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    eps = parse_one(args.eps).value

    model = robeval.load_model("digits-deit")
    images, labels = digits_split("test")
    idx = balanced_subset(labels.tolist(), args.n)
    x, y = torch.from_numpy(images[idx]), torch.from_numpy(labels[idx])

    counted = PassCounter(model)
    ours = create("spsa", counted, eps=eps, iterations=args.iterations, samples=args.samples, lr=0.01, delta=0.01)
    tick = time.perf_counter()
    x_ours = ours(x, y, seed=0)
    t_ours = time.perf_counter() - tick
    passes_ours = counted.forward_images

    counted.reset()
    theirs = torchattacks.SPSA(counted, eps=eps, delta=0.01, lr=0.01, nb_iter=args.iterations, nb_sample=args.samples)
    torch.manual_seed(0)
    tick = time.perf_counter()
    x_theirs = theirs(x, y)
    t_theirs = time.perf_counter() - tick
    passes_theirs = counted.forward_images

    clean = robust_top1(model, x, y)
    print(f"SPSA on {args.n} digits images, eps {args.eps}, {args.iterations} iterations x {args.samples} samples")
    print(f"  clean top-1                {clean:6.2f}%")
    print(f"  robeval      {t_ours:8.2f} s   robust top-1 {robust_top1(model, x_ours, y):6.2f}%   image forwards {passes_ours:,}")
    print(f"  torchattacks {t_theirs:8.2f} s   robust top-1 {robust_top1(model, x_theirs, y):6.2f}%   image forwards {passes_theirs:,}")
    print(f"  speed-up at the same settings (torchattacks time / robeval time): {t_theirs / t_ours:.2f}x")
    print(f"  speed-up per image forward pass: {(t_theirs / passes_theirs) / (t_ours / passes_ours):.2f}x")


if __name__ == "__main__":
    main()

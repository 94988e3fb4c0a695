#!/usr/bin/env python
"""Benchmark 3: how close the seven-attack suite runs to its floor.

Floor = the model passes each attack actually spent (forward and backward images, counted by the
engine for every example) x the measured cost of one pass, measured in the same run at the suite's
batch size.  Prints time, floor and ratio per attack and overall (target: at most 1.3x overall).

    .venv/bin/python benchmarks/suite_efficiency.py [--n 100] [--eps 8/255]
"""

from __future__ import annotations

import argparse
import time

import torch

import robeval
from robeval.api import evaluate_full


def per_image_costs(model, batch: int, repeats: int = 20) -> tuple[float, float]:
    """Seconds per image of a forward pass, and of the extra backward pass, at ``batch``."""
    x = torch.rand(batch, 1, 8, 8)
    with torch.no_grad():
        model(x)
        tick = time.perf_counter()
        for _ in range(repeats):
            model(x)
        fwd = (time.perf_counter() - tick) / repeats / batch
    tick = time.perf_counter()
    for _ in range(repeats):
        xg = x.clone().requires_grad_(True)
        torch.autograd.grad(model(xg).logsumexp(1).sum(), xg)
    both = (time.perf_counter() - tick) / repeats / batch
    return fwd, max(both - fwd, 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--eps", default="8/255")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = robeval.load_model("digits-deit")
    fwd_cost, bwd_cost = per_image_costs(model, args.n)
    tick = time.perf_counter()
    res = evaluate_full(models="digits-deit", eps=args.eps, n_examples=args.n, batch_size=args.n)
    total = time.perf_counter() - tick
    fwd_cost2, bwd_cost2 = per_image_costs(model, args.n)
    fwd_cost, bwd_cost = (fwd_cost + fwd_cost2) / 2, (bwd_cost + bwd_cost2) / 2
    rec = res.records
    print(f"seven-attack suite on {args.n} digits images at eps {args.eps}; one pass: forward {fwd_cost * 1e6:.1f} us/image, "
          f"backward {bwd_cost * 1e6:.1f} us/image")
    print(f"  {'attack':8s} {'time s':>8s} {'floor s':>8s} {'ratio':>6s}   forward / backward images")
    floor_sum = time_sum = 0.0
    for attack in res.info["config"]["attacks"]:
        sel = rec[rec["attack"] == attack]
        f_img, b_img = float(sel["forward_passes"].sum()), float(sel["backward_passes"].sum())
        floor = f_img * fwd_cost + b_img * bwd_cost
        spent = res.info["timings_seconds"][f"digits-deit|{args.eps}|{attack}"]
        floor_sum += floor
        time_sum += spent
        print(f"  {attack:8s} {spent:8.2f} {floor:8.2f} {spent / floor:6.2f}   {f_img:,.0f} / {b_img:,.0f}")
    print(f"  {'attacks':8s} {time_sum:8.2f} {floor_sum:8.2f} {time_sum / floor_sum:6.2f}   (target <= 1.3x)")
    print(f"  whole run incl. loading, clean pass and records: {total:.2f} s = {total / floor_sum:.2f}x the floor")


if __name__ == "__main__":
    main()

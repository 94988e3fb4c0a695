#!/usr/bin/env python
"""Estimate the wall time of the paper's full evaluation (50,000 ImageNet images, seven attacks).

estimate = images x sum over attacks of (forward passes per image x t_forward
                                         + backward passes per image x t_backward) / GPUs

* passes per image per attack: read from a stored robeval run (the engine counts every forward and
  backward image pass per example); by default a fresh digits run at 8/255, whose robust accuracy
  (about 68%) sets how long the cascaded attacks (APGD-T, FAB-T, Square) and early-stopping SPSA
  keep working on an example;
* t_forward: seconds per image of a forward pass of the model on the GPU, from
  ``robeval profile --device cuda`` (or benchmarks/gpu.sh), given with --forward-img-s;
  t_backward = --backward-factor x t_forward (input-gradient backward ~ 2 forwards);
* GPUs: batches are split evenly across workers (torchrun), so time divides by the GPU count.

    .venv/bin/python benchmarks/estimate_full_eval.py --forward-img-s 940 [--gpus 1 8]
"""

from __future__ import annotations

import argparse

from robeval.api import evaluate_full


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--forward-img-s", type=float, required=True, help="measured forward throughput on one GPU")
    parser.add_argument("--backward-factor", type=float, default=2.0)
    parser.add_argument("--images", type=int, default=50_000)
    parser.add_argument("--gpus", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--n", type=int, default=100, help="digits images used to count passes per attack")
    args = parser.parse_args()
    res = evaluate_full(models="digits-deit", eps="8/255", n_examples=args.n)
    rec = res.records
    t_fwd = 1.0 / args.forward_img_s
    t_bwd = args.backward_factor * t_fwd
    total = 0.0
    print(f"passes per image (digits-deit at 8/255, {args.n} images) and seconds per image at "
          f"{args.forward_img_s:.0f} img/s forward:")
    for attack in res.run["config"]["attacks"]:
        sel = rec[rec["attack"] == attack]
        fwd, bwd = float(sel["forward_passes"].mean()), float(sel["backward_passes"].mean())
        seconds = fwd * t_fwd + bwd * t_bwd
        total += seconds
        print(f"  {attack:8s} forward {fwd:8.1f}  backward {bwd:7.1f}  -> {seconds:7.3f} s/image")
    for gpus in args.gpus:
        hours = total * args.images / gpus / 3600
        print(f"  {args.images} images on {gpus} GPU(s): {hours:8.1f} h ({hours / 24:.1f} days)")


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""GPU checks that the CPU suite cannot make: per-example random draws on CUDA generators give the
same records at batch 7 and 32, and a digits run on CUDA agrees with the CPU run on clean top-1.

    python benchmarks/gpu_checks.py          (on a CUDA machine; prints what it compared)
"""

from __future__ import annotations

import pandas as pd
import torch

from robeval.api import evaluate_full

ATTACKS = "fgsm,pgd,spsa,apgd-ce,apgd-t"
SETTINGS = {"spsa": {"iterations": 5, "samples": 32}, "apgd-ce": {"n_iter": 20}, "apgd-t": {"n_iter": 20, "n_target_classes": 3}}
COLUMNS = ["model", "attack", "eps", "example", "adv_top1", "adv_top5", "adv_pred"]


def records(device: str, batch: int) -> pd.DataFrame:
    res = evaluate_full(models="digits-deit-elliptical", eps="8/255", n_examples=100, attacks=ATTACKS, settings=SETTINGS,
                        batch_size=batch, device=device)
    return res.records[COLUMNS].sort_values(["attack", "example"]).reset_index(drop=True)


def main() -> None:
    assert torch.cuda.is_available(), "needs a CUDA GPU"
    a, b = records("cuda", 7), records("cuda", 32)
    same = (a == b).all(axis=1)
    print(f"cuda batch 7 vs 32: {int(same.sum())}/{len(same)} records identical")
    for attack, group in a.assign(same=same).groupby("attack"):
        print(f"  {attack:8s} identical {int(group['same'].sum())}/{len(group)}; top-1 {100 * group['adv_top1'].mean():.1f}%")
    cpu = records("cpu", 32)
    top1 = pd.DataFrame({"cuda": a.groupby("attack")["adv_top1"].mean() * 100, "cpu": cpu.groupby("attack")["adv_top1"].mean() * 100})
    print("robust top-1 (%), cuda vs cpu at batch 32 (float kernels differ, so near, not equal):")
    print(top1.round(1).to_string())


if __name__ == "__main__":
    main()

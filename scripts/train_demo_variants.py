#!/usr/bin/env python
"""Train the embedded digits demos of the attention variants and robust-attention baselines
(digits-deit-{optimised,efficient,super,rkde,mom}) and write them into robeval/zoo/.

The recipe is scripts/train_demo_zoo.py's (same seed, data order, augmentation, optimiser and
schedule; 300 epochs), so the models differ from digits-deit only in their attention layers.
Prints every test accuracy.

    .venv/bin/python scripts/train_demo_variants.py [--only super,mom] [--epochs 300] [--out robeval/zoo]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from robeval.models.digits import DIGITS_ARCH
from robeval.models.digits_variants import DIGITS_VARIANTS, digits_variant_vit
from robeval.robustbench_ext.data import digits_split

_spec = importlib.util.spec_from_file_location("train_demo_zoo", Path(__file__).with_name("train_demo_zoo.py"))
zoo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(zoo)  # shift_augment, accuracy, MEAN, STD: the recipe's shared parts

BATCH, LR, WEIGHT_DECAY, WARMUP_EPOCHS = 64, 1e-3, 0.05, 5


def train(kind: str, epochs: int, seed: int, lr: float = LR) -> tuple[torch.nn.Module, float]:
    """train_demo_zoo.train with the network swapped for the digits variant ``kind``."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    xtr, ytr = (torch.from_numpy(a) for a in digits_split("train"))
    xte, yte = (torch.from_numpy(a) for a in digits_split("test"))
    net = digits_variant_vit(kind, drop_path_rate=0.1)
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=WEIGHT_DECAY)
    steps_per_epoch = math.ceil(len(ytr) / BATCH)
    total = epochs * steps_per_epoch
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / (WARMUP_EPOCHS * steps_per_epoch)) * 0.5 * (1 + math.cos(math.pi * s / total)))
    for epoch in range(epochs):
        net.train()
        perm = torch.randperm(len(ytr), generator=gen)
        for start in range(0, len(ytr), BATCH):
            idx = perm[start:start + BATCH]
            xb = zoo.shift_augment(xtr[idx], gen)
            loss = F.cross_entropy(net((xb - zoo.MEAN) / zoo.STD), ytr[idx], label_smoothing=0.1)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            sched.step()
        if (epoch + 1) % 50 == 0:
            print(f"  {kind} epoch {epoch + 1}: loss {loss.item():.3f} test top-1 {100 * zoo.accuracy(net, xte, yte):.2f}%",
                  flush=True)
    return net.eval(), zoo.accuracy(net, xte, yte)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default=",".join(DIGITS_VARIANTS), help="comma-separated kinds to train")
    parser.add_argument("--epochs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lr", type=float, default=LR)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (1: fast on these tiny models and not slowed by a busy machine)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "robeval" / "zoo")
    args = parser.parse_args()
    kinds = [k.strip() for k in args.only.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in DIGITS_VARIANTS]
    if unknown:
        parser.error(f"unknown kind {unknown[0]!r} (choose from {', '.join(DIGITS_VARIANTS)})")
    torch.set_num_threads(max(1, args.threads))
    args.out.mkdir(parents=True, exist_ok=True)
    for kind in kinds:
        name = f"digits-deit-{kind}"
        tick = time.time()
        net, acc = train(kind, args.epochs, args.seed, args.lr)
        meta = {"arch": json.dumps(DIGITS_ARCH), "attention": kind, "epochs": str(args.epochs), "seed": str(args.seed),
                "lr": str(args.lr), "test_top1": f"{100 * acc:.2f}", "trained_by": "scripts/train_demo_variants.py"}
        path = args.out / f"{name}.safetensors"
        save_file({k: v.contiguous() for k, v in net.state_dict().items()}, str(path), metadata=meta)
        print(f"{name}: test top-1 {100 * acc:.2f}% ({time.time() - tick:.0f} s) -> {path} "
              f"({path.stat().st_size / 1e6:.2f} MB)", flush=True)


if __name__ == "__main__":
    main()

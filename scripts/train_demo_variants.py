#!/usr/bin/env python
"""Train the embedded digits demos of the attention variants and robust-attention baselines
(digits-deit-{optimised,efficient,super,rkde,mom}) and write them into robeval/zoo/.

The recipe is robeval's (robeval.models.training: the same seed, data order, augmentation, optimiser
and schedule as scripts/train_demo_zoo.py; 300 epochs), so the models differ from digits-deit only in
their attention layers.  Prints every test accuracy.

    .venv/bin/python scripts/train_demo_variants.py [--only super,mom] [--epochs 300] [--out robeval/zoo]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from robeval.models.attention.kinds import ATTENTION_KINDS as DIGITS_VARIANTS
from robeval.models.deit_attention import digits_variant_vit
from robeval.models.training import SHIPPED, save_demo, train_network


def train(kind: str, epochs: int, seed: int, lr: float = SHIPPED[1]) -> tuple[torch.nn.Module, float]:
    """The recipe with the network swapped for the digits variant ``kind``."""
    torch.manual_seed(seed)
    net = digits_variant_vit(kind, drop_path_rate=0.1)
    return train_network(net, epochs, seed, lr=lr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="optimised,efficient,super,rkde,mom", help="comma-separated kinds to train")
    parser.add_argument("--epochs", type=int, default=SHIPPED[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lr", type=float, default=SHIPPED[1])
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (1: fast on these tiny models and not slowed by a busy machine)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "robeval" / "zoo")
    args = parser.parse_args()
    kinds = [k.strip() for k in args.only.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in DIGITS_VARIANTS]
    if unknown:
        parser.error(f"unknown kind {unknown[0]!r} (choose from {', '.join(DIGITS_VARIANTS)})")
    torch.set_num_threads(max(1, args.threads))
    for kind in kinds:
        name = f"digits-deit-{kind}"
        net, acc = train(kind, args.epochs, args.seed, args.lr)
        path = save_demo(net, acc, args.out / f"{name}.safetensors",
                         {"attention": kind, "epochs": str(args.epochs), "seed": str(args.seed), "lr": str(args.lr),
                          "trained_by": "scripts/train_demo_variants.py"})
        print(f"{name}: test top-1 {100 * acc:.2f}% -> {path}", flush=True)


if __name__ == "__main__":
    main()

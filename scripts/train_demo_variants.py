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
from pathlib import Path

import torch

from robeval.models.deit_attention import digits_variant_vit
from robeval.models.attention.kinds import ATTENTION_KINDS as DIGITS_VARIANTS

_spec = importlib.util.spec_from_file_location("train_demo_zoo", Path(__file__).with_name("train_demo_zoo.py"))
zoo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(zoo)  # the recipe: train_network, save_demo

LR = 1e-3


def train(kind: str, epochs: int, seed: int, lr: float = LR) -> tuple[torch.nn.Module, float]:
    """train_demo_zoo's recipe with the network swapped for the digits variant ``kind``."""
    torch.manual_seed(seed)
    net = digits_variant_vit(kind, drop_path_rate=0.1)
    return zoo.train_network(net, epochs, seed, kind, lr=lr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="optimised,efficient,super,rkde,mom", help="comma-separated kinds to train")
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
        net, acc = train(kind, args.epochs, args.seed, args.lr)
        zoo.save_demo(net, acc, args.out / f"{name}.safetensors",
                      {"attention": kind, "epochs": str(args.epochs), "seed": str(args.seed), "lr": str(args.lr),
                       "trained_by": "scripts/train_demo_variants.py"})


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""Train the embedded demo models (digits-deit, digits-deit-elliptical) and write them into robeval/zoo/.

Seeded and reproducible on a CPU (a few minutes on 2 cores).  Both models see the same data order
and augmentation; they differ only in the attention layers.  Prints both test accuracies.  The recipe
is robeval's (robeval.models.training, which `robeval train-demo` runs too), at the shipped zoo's 300
epochs and lr 1e-3.

    .venv/bin/python scripts/train_demo_zoo.py [--epochs 300] [--out robeval/zoo]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from robeval.models.digits import digits_vit
from robeval.models.training import SHIPPED, save_demo, train_network


def report_every(label: str, every: int = 50):
    """A progress callback that prints the loss every ``every`` epochs."""
    def progress(done: int, epochs: int, loss: float) -> None:
        if done % every == 0:
            print(f"  {label} epoch {done}: loss {loss:.3f}", flush=True)
    return progress


def train(elliptical: bool, epochs: int, seed: int) -> tuple[torch.nn.Module, float]:
    torch.manual_seed(seed)
    net = digits_vit(elliptical=elliptical, drop_path_rate=0.1)
    label = "elliptical" if elliptical else "deit"
    return train_network(net, epochs, seed, lr=SHIPPED[1], progress=report_every(label))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=SHIPPED[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "robeval" / "zoo")
    args = parser.parse_args()
    torch.set_num_threads(min(2, torch.get_num_threads()))
    for name, elliptical in (("digits-deit", False), ("digits-deit-elliptical", True)):
        net, acc = train(elliptical, args.epochs, args.seed)
        path = save_demo(net, acc, args.out / f"{name}.safetensors",
                         {"elliptical": str(elliptical), "epochs": str(args.epochs), "seed": str(args.seed),
                          "trained_by": "scripts/train_demo_zoo.py"})
        print(f"{name}: test top-1 {100 * acc:.2f}% -> {path} ({path.stat().st_size / 1e6:.2f} MB)", flush=True)


if __name__ == "__main__":
    main()

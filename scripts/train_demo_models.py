#!/usr/bin/env python
"""Train embedded digits demos of registered digits models by name and write them into robeval/zoo/.

The network is the model's own registered builder (untrained); the recipe is robeval's demo recipe
(robeval.core.defaults.DEMO_RECIPE, through robeval.models.training.train_demo, the function `robeval
train-demo` calls: seed, data order, 1-pixel shifts, AdamW, warm-up + cosine, label smoothing,
stochastic depth 0.1, 300 epochs at lr 1e-3), so `robeval train-demo --model NAME --seed 0` trains it
the same way (the same weights on the same CPU, thread count and torch).  A distilled DeiT (a distillation token and head) is trained with DeiT's hard
distillation from the shipped digits-deit.  train_demo_zoo.py and train_demo_variants.py are this
script with their models named.

    .venv/bin/python scripts/train_demo_models.py digits-rvt digits-rvt-plus digits-deit-distilled [--epochs 300]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from robeval.core.defaults import DEMO_RECIPE, Recipe
from robeval.models.seed_training import recipe_metadata
from robeval.models.training import save_demo, train_demo

ZOO = Path(__file__).resolve().parents[1] / "robeval" / "zoo"


def report_every(label: str, every: int = 50):
    """A progress callback that prints the loss every ``every`` epochs."""
    def progress(done: int, epochs: int, loss: float) -> None:
        if done % every == 0:
            print(f"  {label} epoch {done}: loss {loss:.3f}", flush=True)
    return progress


def main(names: list[str] | None = None, script: str = "scripts/train_demo_models.py") -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*" if names else "+", default=names, help="registered digits models")
    parser.add_argument("--epochs", type=int, default=DEMO_RECIPE.epochs)
    parser.add_argument("--lr", type=float, default=DEMO_RECIPE.lr)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (1: fast on these tiny models and not slowed by a busy machine)")
    parser.add_argument("--out", type=Path, default=ZOO)
    args = parser.parse_args()
    torch.set_num_threads(max(1, args.threads))
    recipe = Recipe(args.epochs, args.lr, DEMO_RECIPE.stochastic_depth)
    for name in args.names:
        net, acc = train_demo(name, recipe.epochs, args.seed, lr=recipe.lr, progress=report_every(name))
        path = save_demo(net, acc, args.out / f"{name}.safetensors", recipe_metadata(name, recipe, args.seed, script))
        print(f"{name}: test top-1 {100 * acc:.2f}% -> {path} ({path.stat().st_size / 1e6:.2f} MB)", flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""Train embedded digits demos of any registered digits model by name and write them into robeval/zoo/.

The network is the model's own registered builder (untrained); the recipe is robeval's
(robeval.models.training: seed, data order, 1-pixel shifts, AdamW, warm-up + cosine, label
smoothing) at the shipped zoo's 300 epochs and lr 1e-3.  A distilled DeiT (a distillation token and
head) is trained with DeiT's hard distillation: the class head on the labels, the distillation head on
the shipped digits-deit's predictions for the same augmented batch, each loss weighted 1/2.
(`robeval train-demo --model NAME --out FILE --epochs 300 --lr 1e-3` does the same for one model.)

    .venv/bin/python scripts/train_demo_models.py digits-rvt digits-rvt-plus digits-deit-distilled [--epochs 300]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from robeval.models.training import SHIPPED, save_demo, train_demo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="+", help="registered digits models (their weights are embedded: ...)")
    parser.add_argument("--epochs", type=int, default=SHIPPED[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "robeval" / "zoo")
    args = parser.parse_args()
    torch.set_num_threads(max(1, args.threads))
    for name in args.names:
        net, acc = train_demo(name, args.epochs, args.seed, lr=SHIPPED[1])
        path = save_demo(net, acc, args.out / f"{name}.safetensors",
                         {"arch": f"registered model {name}", "model": name, "epochs": str(args.epochs),
                          "seed": str(args.seed), "trained_by": "scripts/train_demo_models.py"})
        print(f"{name}: test top-1 {100 * acc:.2f}% -> {path}", flush=True)


if __name__ == "__main__":
    main()

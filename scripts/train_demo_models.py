#!/usr/bin/env python
"""Train embedded digits demos of any registered digits model by name and write them into robeval/zoo/.

The network is the model's own registered builder (untrained); the recipe is
scripts/train_demo_zoo.py's (seed, data order, 1-pixel shifts, AdamW, warm-up + cosine, label
smoothing; 300 epochs).  A distilled DeiT (a distillation token and head) is trained with DeiT's hard
distillation: the class head on the labels, the distillation head on the shipped digits-deit's
predictions for the same augmented batch, each loss weighted 1/2.

    .venv/bin/python scripts/train_demo_models.py digits-rvt digits-rvt-plus digits-deit-distilled [--epochs 300]
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import torch
import torch.nn.functional as F

import robeval
from robeval.models import build_network

_spec = importlib.util.spec_from_file_location("train_demo_zoo", Path(__file__).with_name("train_demo_zoo.py"))
zoo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(zoo)  # the recipe: train_network, save_demo


def hard_distillation(teacher: torch.nn.Module):
    def loss(net, x, y):
        with torch.no_grad():
            teacher_labels = teacher(x).argmax(1)
        net.set_distilled_training(True)
        cls, dist = net(x)
        return 0.5 * F.cross_entropy(cls, y, label_smoothing=0.1) + 0.5 * F.cross_entropy(dist, teacher_labels)
    return loss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="+", help="registered digits models (their weights are embedded: ...)")
    parser.add_argument("--epochs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "robeval" / "zoo")
    args = parser.parse_args()
    torch.set_num_threads(max(1, args.threads))
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.names:
        torch.manual_seed(args.seed)
        net = build_network(name)
        loss_fn = zoo.smoothed_ce
        if hasattr(net, "set_distilled_training"):
            loss_fn = hard_distillation(robeval.load_model("digits-deit").net.eval())  # normalized input, as fed
        net, acc = zoo.train_network(net, args.epochs, args.seed, name, loss_fn=loss_fn)
        if hasattr(net, "set_distilled_training"):
            net.set_distilled_training(False)
        zoo.save_demo(net, acc, args.out / f"{name}.safetensors",
                      {"arch": f"registered model {name}", "model": name, "epochs": str(args.epochs), "seed": str(args.seed),
                       "trained_by": "scripts/train_demo_models.py"})


if __name__ == "__main__":
    main()

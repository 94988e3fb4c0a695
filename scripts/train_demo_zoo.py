#!/usr/bin/env python
"""Train the embedded demo models (digits-deit, digits-deit-elliptical) and write them into robeval/zoo/.

Seeded and reproducible on a CPU (a few minutes on 2 cores).  Both models see the same data order
and augmentation; they differ only in the attention layers.  Prints both test accuracies.

    .venv/bin/python scripts/train_demo_zoo.py [--epochs 60] [--out robeval/zoo]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from robeval.models.digits import DIGITS_ARCH, digits_vit
from robeval.data.digits import digits_split

MEAN, STD = 0.5, 0.5


def shift_augment(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Random translation by up to one pixel (zero padding)."""
    padded = F.pad(x, (1, 1, 1, 1))
    out = torch.empty_like(x)
    offsets = torch.randint(0, 3, (x.shape[0], 2), generator=gen)
    for i, (dy, dx) in enumerate(offsets.tolist()):
        out[i] = padded[i, :, dy:dy + 8, dx:dx + 8]
    return out


def accuracy(net, x, y) -> float:
    net.eval()
    with torch.inference_mode():
        return float((net((x - MEAN) / STD).argmax(1) == y).float().mean())


def smoothed_ce(net: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(net(x), y, label_smoothing=0.1)


def train_network(net: torch.nn.Module, epochs: int, seed: int, label: str, lr: float = 1e-3,
                  loss_fn=smoothed_ce) -> tuple[torch.nn.Module, float]:
    """The demo recipe: AdamW, warm-up + cosine, label smoothing, 1-pixel shifts, clipped gradients;
    ``loss_fn(net, normalized images, labels)`` (distillation swaps it)."""
    gen = torch.Generator().manual_seed(seed)
    xtr, ytr = (torch.from_numpy(a) for a in digits_split("train"))
    xte, yte = (torch.from_numpy(a) for a in digits_split("test"))
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=0.05)
    steps_per_epoch = math.ceil(len(ytr) / 64)
    total = epochs * steps_per_epoch
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / (5 * steps_per_epoch)) * 0.5 * (1 + math.cos(math.pi * s / total)))
    for epoch in range(epochs):
        net.train()
        perm = torch.randperm(len(ytr), generator=gen)
        for start in range(0, len(ytr), 64):
            idx = perm[start:start + 64]
            xb = shift_augment(xtr[idx], gen)
            loss = loss_fn(net, (xb - MEAN) / STD, ytr[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            sched.step()
        if (epoch + 1) % 50 == 0:
            print(f"  {label} epoch {epoch + 1}: loss {loss.item():.3f} test top-1 {100 * accuracy(net, xte, yte):.2f}%",
                  flush=True)
    return net.eval(), accuracy(net, xte, yte)


def save_demo(net: torch.nn.Module, acc: float, path: Path, meta: dict[str, str]) -> None:
    save_file({k: v.contiguous() for k, v in net.state_dict().items()}, str(path),
              metadata={"arch": json.dumps(DIGITS_ARCH), "test_top1": f"{100 * acc:.2f}", **meta})
    print(f"{path.stem}: test top-1 {100 * acc:.2f}% -> {path} ({path.stat().st_size / 1e6:.2f} MB)", flush=True)


def train(elliptical: bool, epochs: int, seed: int) -> tuple[torch.nn.Module, float]:
    torch.manual_seed(seed)
    net = digits_vit(elliptical=elliptical, drop_path_rate=0.1)
    return train_network(net, epochs, seed, "elliptical" if elliptical else "deit")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "robeval" / "zoo")
    args = parser.parse_args()
    torch.set_num_threads(min(2, torch.get_num_threads()))
    args.out.mkdir(parents=True, exist_ok=True)
    for name, elliptical in (("digits-deit", False), ("digits-deit-elliptical", True)):
        net, acc = train(elliptical, args.epochs, args.seed)
        save_demo(net, acc, args.out / f"{name}.safetensors",
                  {"elliptical": str(elliptical), "epochs": str(args.epochs), "seed": str(args.seed),
                   "trained_by": "scripts/train_demo_zoo.py"})


if __name__ == "__main__":
    main()

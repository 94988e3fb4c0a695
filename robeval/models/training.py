"""The embedded demo models' training recipe, as a library: any digits-sized model (8x8 grey digits, 10
classes) trained on the fixed digits training split, deterministically from a seed.

The recipe (scripts/train_demo_zoo.py made the shipped zoo with it): AdamW (weight decay 0.05), batches
of 64, a 5-epoch linear warm-up into a cosine decay, label smoothing 0.1, random shifts by up to one
pixel, gradients clipped to norm 1; the shipped models had 300 epochs at lr 1e-3.  ``robeval train-demo``
runs it shorter by default, 100 epochs at lr 5e-3 (:data:`TRAIN_DEMO`), so that a new attention is
trained and through every attack, table, check and the report in minutes, before any GPU time is spent:
standard attention reaches 97.6% there (the shipped digits-deit: 97.8%) in about a minute on one CPU
thread.  A distilled DeiT (a distillation token
and head) trains with DeiT's hard distillation: the class head on the labels, the distillation head on
the shipped digits-deit's predictions, each loss weighted 1/2.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from ..atomic_files import replacing
from ..data.digits import digits_split
from ..defaults import SHIPPED_RECIPE, TRAIN_DEMO_RECIPE
from ..errors import UserError
from ..model_config import ModelConfig
from .digits import DIGITS, DIGITS_ARCH, DIGITS_CFG

SHIPPED, TRAIN_DEMO = SHIPPED_RECIPE, TRAIN_DEMO_RECIPE  # (epochs, learning rate): the zoo's, train-demo's
BATCH, WEIGHT_DECAY, WARMUP_EPOCHS, SMOOTHING, CLIP = 64, 0.05, 5, 0.1, 1.0
MEAN, STD = DIGITS_CFG["mean"][0], DIGITS_CFG["std"][0]  # the demo's normalization

Loss = Callable[[nn.Module, torch.Tensor, torch.Tensor], torch.Tensor]  # (net, normalized images, labels)
Progress = Callable[[int, int, float], None]  # (epochs done, epochs, last batch's loss)


def shift_augment(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Random translation by up to one pixel (zero padding)."""
    padded = F.pad(x, (1, 1, 1, 1))
    out = torch.empty_like(x)
    offsets = torch.randint(0, 3, (x.shape[0], 2), generator=gen)
    side = x.shape[-1]
    for i, (dy, dx) in enumerate(offsets.tolist()):
        out[i] = padded[i, :, dy : dy + side, dx : dx + side]
    return out


def accuracy(net: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Top-1 accuracy of ``net`` (which takes normalized images) on [0,1] images ``x``."""
    net.eval()
    with torch.inference_mode():
        return float((net((x - MEAN) / STD).argmax(1) == y).float().mean())


def smoothed_ce(net: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(net(x), y, label_smoothing=SMOOTHING)


def hard_distillation(teacher: nn.Module) -> Loss:
    """DeiT's hard distillation against ``teacher`` (a network taking normalized images)."""

    def loss(net: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            teacher_labels = teacher(x).argmax(1)
        net.set_distilled_training(True)  # type: ignore[operator]
        cls, dist = net(x)
        return 0.5 * F.cross_entropy(cls, y, label_smoothing=SMOOTHING) + 0.5 * F.cross_entropy(dist, teacher_labels)

    return loss


def _schedule(opt: torch.optim.Optimizer, epochs: int, steps_per_epoch: int) -> torch.optim.lr_scheduler.LambdaLR:
    total = epochs * steps_per_epoch
    warmup = WARMUP_EPOCHS * steps_per_epoch
    return torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * s / total))
    )


def train_network(
    net: nn.Module,
    epochs: int,
    seed: int,
    lr: float = SHIPPED[1],
    loss_fn: Loss = smoothed_ce,
    progress: Progress | None = None,
) -> tuple[nn.Module, float]:
    """The recipe (module docstring) on ``net`` (which takes normalized images); returns it in eval mode
    and its top-1 accuracy on the digits test split.  Deterministic from ``seed`` (data order, shifts)."""
    gen = torch.Generator().manual_seed(seed)
    xtr, ytr = (torch.from_numpy(a) for a in digits_split("train"))
    xte, yte = (torch.from_numpy(a) for a in digits_split("test"))
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=WEIGHT_DECAY)
    sched = _schedule(opt, epochs, math.ceil(len(ytr) / BATCH))
    for epoch in range(epochs):
        net.train()
        perm = torch.randperm(len(ytr), generator=gen)
        for start in range(0, len(ytr), BATCH):
            idx = perm[start : start + BATCH]
            loss = loss_fn(net, (shift_augment(xtr[idx], gen) - MEAN) / STD, ytr[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), CLIP)
            opt.step()
            sched.step()
        if progress is not None:
            progress(epoch + 1, epochs, float(loss.detach()))
    return net.eval(), accuracy(net, xte, yte)


def check_digits_sized(name: str, config: ModelConfig) -> None:
    """``name`` (with facts ``config``) takes the demo's images and gives its classes, or one line
    saying what it takes."""
    size, classes = tuple(config.input_size or ()), config.num_classes
    if size != DIGITS.input_size or classes != DIGITS.num_classes:
        raise UserError(
            f"train-demo trains digits-sized models (input {DIGITS.input_size}, {DIGITS.num_classes} classes); "
            f"{name} takes {size} and has {classes} classes"
        )


def _digits_network(name: str, seed: int) -> nn.Module:
    """``name`` built by seed ``seed``, checked to be digits-sized (its registration's facts before it is
    built; a network that is not robeval's own is run once on a zero batch)."""
    from . import build_network, get_spec
    from .given import check_output, complete_config

    spec = get_spec(name)
    if spec.config is not None:
        check_digits_sized(name, spec.config)
    torch.manual_seed(seed)
    net = build_network(name)
    config = spec.config if spec.config is not None else complete_config(net, name)
    check_digits_sized(name, config)
    if spec.package != "robeval":
        check_output(net, name, config)
    return net


def train_demo(
    name: str,
    epochs: int = TRAIN_DEMO[0],
    seed: int = 0,
    lr: float = TRAIN_DEMO[1],
    progress: Progress | None = None,
) -> tuple[nn.Module, float]:
    """Train the digits model ``name`` (registered, a plugin's, or the user's code) with the recipe from
    a network built by seed ``seed``; returns the network and its test accuracy."""
    from . import load_model

    if epochs < 1:
        raise UserError(f"--epochs must be at least 1, got {epochs}")
    if not lr > 0:
        raise UserError(f"--lr must be positive, got {lr}")
    net = _digits_network(name, seed)
    loss_fn: Loss = smoothed_ce
    distilled = hasattr(net, "set_distilled_training")
    if distilled:  # the teacher takes the normalized images the recipe feeds
        loss_fn = hard_distillation(load_model("digits-deit").net.eval())
    net, acc = train_network(net, epochs, seed, lr=lr, loss_fn=loss_fn, progress=progress)
    if distilled:
        net.set_distilled_training(False)  # type: ignore[operator]
    return net, acc


WEIGHT_SUFFIXES = (".safetensors", ".pth", ".pt")


def check_weights_path(path: Path) -> Path:
    """A weights file name ``save_demo`` can write (checked before any training)."""
    if path.suffix not in WEIGHT_SUFFIXES:
        raise UserError(f"--out {path}: name the weights file *{' or *'.join(WEIGHT_SUFFIXES)}")
    return path


def save_demo(net: nn.Module, acc: float, path: Path, meta: dict[str, str]) -> Path:
    """The trained network's state dict as a file that ``--checkpoint`` loads strictly: safetensors (with
    ``meta`` and the accuracy as its metadata), or a ``torch.save`` of the state dict for .pth / .pt;
    written whole or not at all."""
    from safetensors.torch import save_file

    check_weights_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous() for k, v in net.state_dict().items()}
    info = {"arch": json.dumps(DIGITS_ARCH), "test_top1": f"{100 * acc:.2f}", **meta}
    with replacing(path) as tmp:
        if path.suffix == ".safetensors":
            save_file(state, str(tmp), metadata=info)
        else:
            torch.save(state, tmp)
    return path

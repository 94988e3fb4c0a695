"""The embedded demo models' training recipe, as a library: any digits-sized model (8x8 grey digits, 10
classes) trained on the fixed digits training split, deterministically from a seed.

The recipe (:data:`~robeval.defaults.DEMO_RECIPE`), which shipped models were trained with it (by
scripts/train_demo_zoo.py and train_demo_variants.py, through the same function as ``robeval
train-demo``) and how far a retrained model lands from a shipped one: docs/models.md, section One recipe.
A distilled DeiT (a distillation token and head) trains with DeiT's hard distillation: the class head
on the labels, the distillation head on the shipped digits-deit's predictions, each loss weighted 1/2.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from ..core.atomic_files import replacing
from ..core.defaults import DEMO_RECIPE
from ..core.errors import UserError
from ..data.digits import digits_split
from ..model_config import ModelConfig
from .catalog import DIGITS, DIGITS_CFG
from .vits import DIGITS_ARCH

BATCH, WEIGHT_DECAY, WARMUP_EPOCHS, SMOOTHING, CLIP = 64, 0.05, 5, 0.1, 1.0

Loss = Callable[[nn.Module, torch.Tensor, torch.Tensor], torch.Tensor]  # (net, normalized images, labels)
Progress = Callable[[int, int, float], None]  # (epochs done, epochs, last batch's loss)
LEARNED = 2.0  # a trained model must reach this many times chance accuracy (1 / classes) on the test split


def shift_augment(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Random translation by up to one pixel (zero padding)."""
    padded = F.pad(x, (1, 1, 1, 1))
    out = torch.empty_like(x)
    offsets = torch.randint(0, 3, (x.shape[0], 2), generator=gen)
    side = x.shape[-1]
    for i, (dy, dx) in enumerate(offsets.tolist()):
        out[i] = padded[i, :, dy : dy + side, dx : dx + side]
    return out


def normalizer(config: ModelConfig) -> Callable[[torch.Tensor], torch.Tensor]:
    """[0,1] images -> what a network taking ``config``'s normalization (mean, std per channel) takes."""
    mean, std = (torch.tensor(v, dtype=torch.float32).view(1, -1, 1, 1) for v in (config.mean, config.std))
    return lambda x: (x - mean) / std


def accuracy(net: nn.Module, x: torch.Tensor, y: torch.Tensor, config: ModelConfig = DIGITS) -> float:
    """Top-1 accuracy of ``net`` (which takes images normalized as ``config`` states) on [0,1] images ``x``."""
    net.eval()
    with torch.inference_mode():
        return float((net(normalizer(config)(x)).argmax(1) == y).float().mean())


class TrainingFailed(UserError):
    """A training that gives no model worth writing (its loss not finite, or it ends at chance): one line,
    and with several seeds the others still train."""


def check_finite(loss: float, epoch: int, epochs: int, lr: float) -> None:
    """A loss that is NaN or infinite ends the training in one line: every weight after it is garbage."""
    if not math.isfinite(loss):
        raise TrainingFailed(
            f"training diverged: the loss is {loss} in epoch {epoch} of {epochs} (lr {lr:g} is likely too large); "
            "nothing was written"
        )


def check_learned(name: str, acc: float, classes: int = int(DIGITS_CFG["num_classes"])) -> None:
    """A model that ends near chance (under :data:`LEARNED` times 1/classes) learnt nothing: one line,
    so that no file of such weights is written as if it were a trained model."""
    if acc < LEARNED / classes:
        raise TrainingFailed(
            f"{name} reached {100 * acc:.2f}% on the digits test split, under {LEARNED:g}x chance "
            f"({100 * LEARNED / classes:.0f}%): it learnt nothing (too few --epochs, or a --lr too small or too "
            "large); nothing was written"
        )


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
    lr: float = DEMO_RECIPE.lr,
    loss_fn: Loss = smoothed_ce,
    progress: Progress | None = None,
    config: ModelConfig = DIGITS,
) -> tuple[nn.Module, float]:
    """The recipe (module docstring) on ``net`` (which takes images normalized as ``config`` states, the
    demo's by default); returns it in eval mode and its top-1 accuracy on the digits test split.
    Deterministic from ``seed`` (data order, shifts); a loss that is not finite stops it (one line)."""
    gen = torch.Generator().manual_seed(seed)
    xtr, ytr = (torch.from_numpy(a) for a in digits_split("train"))
    xte, yte = (torch.from_numpy(a) for a in digits_split("test"))
    normalize = normalizer(config)
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=WEIGHT_DECAY)
    sched = _schedule(opt, epochs, math.ceil(len(ytr) / BATCH))
    for epoch in range(epochs):
        net.train()
        perm = torch.randperm(len(ytr), generator=gen)
        for start in range(0, len(ytr), BATCH):
            idx = perm[start : start + BATCH]
            loss = loss_fn(net, normalize(shift_augment(xtr[idx], gen)), ytr[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), CLIP)
            opt.step()
            sched.step()
        last = float(loss.detach())
        check_finite(last, epoch + 1, epochs, lr)  # a NaN stays NaN: checked once an epoch
        if progress is not None:
            progress(epoch + 1, epochs, last)
    return net.eval(), accuracy(net, xte, yte, config)


def check_digits_sized(name: str, config: ModelConfig) -> None:
    """``name`` (with facts ``config``) takes the demo's images and gives its classes, or one line
    saying what it takes."""
    size, classes = tuple(config.input_size or ()), config.num_classes
    if size != DIGITS.input_size or classes != DIGITS.num_classes:
        raise UserError(
            f"train-demo trains digits-sized models (input {DIGITS.input_size}, {DIGITS.num_classes} classes); "
            f"{name} takes {size} and has {classes} classes"
        )


def _digits_network(name: str, seed: int) -> tuple[nn.Module, ModelConfig]:
    """``name`` built by seed ``seed``, checked to be digits-sized (its registration's facts before it is
    built) and admitted as a run admits it (robeval.models.admission: a plugin's network run once; the
    user's code's facts and output checked), with its facts."""
    from .admission import built_network
    from .given import complete_config
    from .names import get_spec

    spec = get_spec(name)
    if spec.config is not None:
        check_digits_sized(name, spec.config)
    torch.manual_seed(seed)
    net = built_network(spec, name, {})
    config = spec.config if spec.config is not None else complete_config(net, name)
    check_digits_sized(name, config)
    return net, config


def check_recipe(epochs: int, lr: float) -> None:
    """--epochs and --lr that a training can run with (one line each), checked before anything is made."""
    if epochs < 1:
        raise UserError(f"--epochs must be at least 1, got {epochs}")
    if not (lr > 0 and math.isfinite(lr)):
        raise UserError(f"--lr must be a positive finite number, got {lr}")


def stochastic_depth(net: nn.Module, rate: float) -> int:
    """Drop paths on ``net``'s timm blocks (modules with ``drop_path1`` and ``drop_path2``: ViT, DeiT, Swin)
    at timm's linear schedule, 0 at the first block to ``rate`` at the last, as building the network with
    ``drop_path_rate=rate`` sets them (they hold no weights and draw no random numbers when built, so the
    initial weights are the same); returns the number of blocks (0: a network without timm blocks)."""
    from timm.layers import DropPath

    blocks = [m for m in net.modules() if hasattr(m, "drop_path1") and hasattr(m, "drop_path2")]
    for block, block_rate in zip(blocks, torch.linspace(0, rate, len(blocks)).tolist()):
        for slot in ("drop_path1", "drop_path2"):
            setattr(block, slot, DropPath(block_rate) if block_rate > 0 else nn.Identity())
    return len(blocks)


def train_demo(
    name: str,
    epochs: int = DEMO_RECIPE.epochs,
    seed: int = 0,
    lr: float = DEMO_RECIPE.lr,
    progress: Progress | None = None,
) -> tuple[nn.Module, float]:
    """Train the digits model ``name`` (registered, a plugin's, or the user's code) with the recipe from
    a network built by seed ``seed``, on images normalized as the model states (so that the weights,
    loaded by ``robeval run``, give the accuracy returned); returns the network and its test accuracy.
    The scripts that trained the shipped zoo call it too: one recipe, one code path."""
    from . import load_model

    check_recipe(epochs, lr)
    net, config = _digits_network(name, seed)
    stochastic_depth(net, DEMO_RECIPE.stochastic_depth)
    loss_fn: Loss = smoothed_ce
    distilled = hasattr(net, "set_distilled_training")
    if distilled:  # the teacher takes the normalized images the recipe feeds
        loss_fn = hard_distillation(load_model("digits-deit").net.eval())
    net, acc = train_network(net, epochs, seed, lr=lr, loss_fn=loss_fn, progress=progress, config=config)
    if distilled:
        net.set_distilled_training(False)  # type: ignore[operator]
    return net, acc


WEIGHT_SUFFIXES = (".safetensors", ".pth", ".pt")


def save_demo(net: nn.Module, acc: float, path: Path, meta: dict[str, str]) -> Path:
    """The trained network's state dict as a file that ``--checkpoint`` loads strictly: safetensors (with
    ``meta`` and the accuracy as its metadata), or a ``torch.save`` of the state dict for .pth / .pt;
    written whole or not at all."""
    from safetensors.torch import save_file

    if path.suffix not in WEIGHT_SUFFIXES:
        raise UserError(f"--out {path}: name the weights file *{' or *'.join(WEIGHT_SUFFIXES)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous() for k, v in net.state_dict().items()}
    info = {"arch": json.dumps(DIGITS_ARCH), "test_top1": f"{100 * acc:.2f}", **meta}
    with replacing(path) as tmp:
        if path.suffix == ".safetensors":
            save_file(state, str(tmp), metadata=info)
        else:
            torch.save(state, tmp)
    return path

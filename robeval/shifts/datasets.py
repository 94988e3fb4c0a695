"""The shifted data of a run: one dataset per (corruption, severity) condition, and the 200-class
restriction of ImageNet-A / ImageNet-R.

A condition dataset serves the run's own examples (same indices, same labels) changed by the
condition, as ``(image, label, [linf, l2])``: generated from the clean image in the DataLoader
workers (``--shift corruptions``), or read from a pre-generated ImageNet-C tree
(``--shift imagenet-c``: ``ROOT/<corruption>/<severity>/<class>/<file>``, the file names of the
clean validation set).  An image whose corruption raises comes back with label
:data:`CORRUPTION_FAILED`; the run skips it, counts it and names it in ``run.json``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import Dataset

from ..attacks.base import derive_seed
from ..errors import UserError
from .catalog import class_set, condition_name, get_shift, parse_corruptions, parse_severities
from .corrupt import corrupt_tensor

CORRUPTION_FAILED = -2  # label of an image whose corruption raised (unreadable files are -1)
MASKED_LOGIT = -1e4  # the logit of a class outside a 200-class set: below any real logit, finite in fp16


@dataclass(frozen=True)
class Condition:
    name: str  # as records and tables name it: gaussian_noise@3
    corruption: str
    severity: int


def conditions(shift: str | None, corruptions=None, severities=None) -> list[Condition]:
    """The (corruption, severity) conditions a run asks for (none without a shift, and none for
    ImageNet-A/-R, which change the data rather than add conditions)."""
    if not shift or get_shift(shift).classes:
        return []
    return [Condition(condition_name(c, s), c, s) for c in parse_corruptions(corruptions)
            for s in parse_severities(severities)]


def config_conditions(config) -> list[Condition]:
    """:func:`conditions` of an :class:`EvalConfig` or of a stored configuration (a dict)."""
    get = config.get if isinstance(config, dict) else lambda key: getattr(config, key, None)
    return conditions(get("shift"), get("corruptions"), get("severities"))


def _norms(shifted: torch.Tensor, clean: torch.Tensor) -> torch.Tensor:
    delta = (shifted - clean).flatten().double()
    return torch.stack([delta.abs().max(), delta.norm()]).float()


class CorruptedImages(Dataset):
    """The examples of ``base`` under one condition; each (corruption, severity, example) has its seed."""

    def __init__(self, base: Dataset, condition: Condition, seed: int) -> None:
        self.base, self.condition, self.seed = base, condition, seed

    def __len__(self) -> int:
        return len(self.base)

    def __getitem__(self, i: int):
        image, label = self.base[i]
        if int(label) < 0:
            return image, label, torch.zeros(2)
        c = self.condition
        try:
            shifted = corrupt_tensor(image, c.corruption, c.severity, derive_seed(self.seed, "shift", c.name, i))
        except Exception:  # a corruption function failing on one image skips that image
            return image, CORRUPTION_FAILED, torch.zeros(2)
        return shifted, label, _norms(shifted, image)


class TreeImages(Dataset):
    """The examples of an ImageNet-C folder tree under one condition, matched by relative path."""

    def __init__(self, base, base_root: str, root: str, condition: Condition) -> None:
        self.base, self.base_root, self.condition = base, base_root, condition
        self.folder = os.path.join(root, condition.corruption, str(condition.severity))

    def __len__(self) -> int:
        return len(self.base)

    def path_of(self, i: int) -> str:
        return os.path.join(self.folder, os.path.relpath(self.base.path_of(i), self.base_root))

    def __getitem__(self, i: int):
        label = self.base.samples[i][1]
        try:
            image = self.base.folder.transform(self.base.folder.loader(self.path_of(i)))
        except Exception:  # missing or broken file: skipped and named, as unreadable clean images are
            return torch.zeros(self.base.input_size), -1, torch.zeros(2)
        return image, label, torch.full((2,), float("nan"))


def check_tree(root: Path, wanted: list[Condition]) -> None:
    """Every requested ``ROOT/<corruption>/<severity>`` exists (one line naming the first missing one)."""
    for c in wanted:
        folder = root / c.corruption / str(c.severity)
        if not folder.is_dir():
            raise UserError(f"ImageNet-C folder missing: {folder} (expected ROOT/<corruption>/<severity>/<class>/...)")


def check_class_set(classes: list[str], shift: str, data: str) -> None:
    """The folders of an ImageNet-A/-R copy must be among that set's 200 wnids."""
    allowed = set(class_set(shift))
    stray = [c for c in classes if c not in allowed]
    if stray:
        raise UserError(f"data {data}: folder {stray[0]!r} is not one of {shift}'s 200 classes "
                        f"({len(stray)} such folders); is this an {shift} copy?")


class RestrictedLogits(nn.Module):
    """A 1000-class model seen through a 200-class set: the other logits are set to
    :data:`MASKED_LOGIT`, so top-1/top-5 (and every attack's loss) range over the set only — what
    indexing the 200 logits gives, with labels kept in ImageNet-1k numbering."""

    def __init__(self, model: nn.Module, shift: str) -> None:
        super().__init__()
        from ..robustbench_ext.labels import imagenet_wnids

        position = {w: i for i, w in enumerate(imagenet_wnids() or [])}
        self.model = model
        self.register_buffer("keep", torch.tensor([position[w] for w in class_set(shift)], dtype=torch.long), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.model(x)
        out = torch.full_like(logits, MASKED_LOGIT)
        return out.index_copy(1, self.keep.to(logits.device), logits.index_select(1, self.keep.to(logits.device)))

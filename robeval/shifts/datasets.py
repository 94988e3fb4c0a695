"""The shifted image folders of a run: one dataset per (corruption, severity) condition, the checks
of the published folder layouts (ImageNet-C's tree, ImageNet-V2's class-index folders, wnid folders)
and the 200-class restriction of ImageNet-A / ImageNet-R.

A condition dataset serves the run's own examples (same indices, same labels) changed by the
condition, as ``(image, label, [linf, l2])``: generated from the clean image in the DataLoader
workers (``--shift corruptions``), or read from a pre-generated ImageNet-C tree
(``--shift imagenet-c``, ``imagenet-3dcc``, ``imagenet-c-bar``:
``ROOT/<corruption>/<severity>/<class>/<file>``, the file names of the clean validation set).  An image whose corruption raises comes back with label
:data:`CORRUPTION_FAILED`; the run skips it, counts it and names it in ``run.json``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.data import Dataset

from ..data.folders import UNREADABLE, load_image
from ..errors import UserError
from ..norms import perturbation_norms
from ..seeds import derive_seed
from .catalog import Condition, class_set
from .corrupt import corrupt_tensor

CORRUPTION_FAILED = -2  # label of an image whose corruption raised (unreadable files are -1)
MASKED_LOGIT = -1e4  # the logit of a class outside a 200-class set: below any real logit, finite in fp16


def _norms(shifted: torch.Tensor, clean: torch.Tensor) -> torch.Tensor:
    """``[linf, l2]`` of one image's shift (float32, as a DataLoader batches them)."""
    return torch.cat(perturbation_norms(shifted[None], clean[None])).float()


class CorruptedImages(Dataset):
    """The examples of ``base`` under one condition; each (corruption, severity, example) has its seed."""

    def __init__(self, base: Any, condition: Condition, seed: int) -> None:
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
    """The examples of an ImageNet-C folder tree under one condition, matched by relative path to
    ``base`` (the first condition's folder, which named the examples)."""

    def __init__(self, base, root: str, condition: Condition) -> None:
        self.base, self.condition = base, condition
        self.folder = os.path.join(root, condition.corruption, str(condition.severity))

    def __len__(self) -> int:
        return len(self.base)

    def path_of(self, i: int) -> str:
        return os.path.join(self.folder, os.path.relpath(self.base.path_of(i), self.base.root))

    def __getitem__(self, i: int):
        label = self.base.samples[i][1]
        try:
            image = self.base.transform(load_image(self.path_of(i)))
        except Exception:  # missing or broken file: skipped and named, as unreadable clean images are
            return torch.zeros(tuple(self.base.spec.input_size)), UNREADABLE, torch.zeros(2)
        return image, label, torch.full((2,), float("nan"))


def check_tree(root: Path, wanted: list[Condition], title: str) -> None:
    """Every requested ``ROOT/<corruption>/<severity>`` exists (one line naming the first missing one)."""
    for c in wanted:
        folder = root / c.corruption / str(c.severity)
        if not folder.is_dir():
            raise UserError(f"{title} folder missing: {folder} (expected ROOT/<corruption>/<severity>/<class>/...)")


def check_class_indices(classes: list[str], data: str) -> None:
    """ImageNet-V2's folders are ImageNet-1k class indices written as plain integers ``0``..``999``."""
    stray = [c for c in classes if not (c.isdigit() and str(int(c)) == c and int(c) < 1000)]
    if stray:
        raise UserError(
            f"data {data}: folder {stray[0]!r} is not a class index 0..999 written as a plain integer "
            f"({len(stray)} such folders); ImageNet-V2's layout is ROOT/<class index>/<image>"
        )


def check_wnids(classes: list[str], data: str, title: str) -> None:
    """Every folder of a wnid-folder copy (ImageNet-Sketch) is one of ImageNet-1k's wnids."""
    from ..data.labels import imagenet_wnids

    known = set(imagenet_wnids() or classes)
    stray = [c for c in classes if c not in known]
    if stray:
        raise UserError(
            f"data {data}: folder {stray[0]!r} is not an ImageNet-1k wnid ({len(stray)} such folders); "
            f"{title}'s layout is ROOT/<wnid>/<image>"
        )


def check_class_set(classes: list[str], shift: str, data: str) -> None:
    """The folders of an ImageNet-A/-R copy must be among that set's 200 wnids."""
    allowed = set(class_set(shift))
    stray = [c for c in classes if c not in allowed]
    if stray:
        raise UserError(
            f"data {data}: folder {stray[0]!r} is not one of {shift}'s 200 classes "
            f"({len(stray)} such folders); is this an {shift} copy?"
        )


class RestrictedLogits(nn.Module):
    """A 1000-class model seen through a 200-class set: the other logits are set to
    :data:`MASKED_LOGIT`, so top-1/top-5 (and every attack's loss) range over the set only — what
    indexing the 200 logits gives, with labels kept in ImageNet-1k numbering."""

    def __init__(self, model: nn.Module, shift: str) -> None:
        super().__init__()
        from ..data.labels import imagenet_wnids

        position = {w: i for i, w in enumerate(imagenet_wnids() or [])}
        self.model = model
        self.keep: torch.Tensor
        self.register_buffer(
            "keep", torch.tensor([position[w] for w in class_set(shift)], dtype=torch.long), persistent=False
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.model(x)
        out = torch.full_like(logits, MASKED_LOGIT)
        return out.index_copy(1, self.keep.to(logits.device), logits.index_select(1, self.keep.to(logits.device)))

"""The images of a run under a shift's condition: one dataset per (corruption, severity) condition.
(The folder layouts they are read from are checked by :mod:`.folder_layouts`; ImageNet-A / -R's
200-class view of a model is :mod:`.restricted_logits`.)

A condition dataset serves the run's own examples (same indices, same labels) changed by the
condition, as ``(image, label, [linf, l2])``: generated from the clean image in the DataLoader
workers (``--shift corruptions``), or read from a pre-generated ImageNet-C tree
(``--shift imagenet-c``, ``imagenet-3dcc``, ``imagenet-c-bar``:
``ROOT/<corruption>/<severity>/<class>/<file>``, the file names of the clean validation set).  An image whose corruption raises comes back with label
:data:`CORRUPTION_FAILED`; the run skips it, counts it and names it in ``run.json``.
"""

from __future__ import annotations

import os
from typing import Any

import torch
from torch.utils.data import Dataset

from ..core.norms import perturbation_norms
from ..core.seeds import derive_seed
from ..data.folders import UNREADABLE, load_image
from .catalog import Condition
from .corrupt import corrupt_tensor

CORRUPTION_FAILED = -2  # label of an image whose corruption raised (unreadable files are -1)


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

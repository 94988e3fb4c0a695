"""The images of a run under a shift's condition: one dataset per (corruption, severity) condition,
and ImageNet-A / -R's 200-class view of a model (:class:`RestrictedLogits`).  What each shift reads
and how small images are corrupted: docs/shift.md.

A condition dataset serves the run's own examples (same indices, same labels) changed by the
condition, as ``(image, label, [linf, l2])``.  An image whose corruption raises comes back with label
:data:`CORRUPTION_FAILED`; the run skips it, counts it and names it in ``run.json``.

The ``imagecorruptions`` package draws from numpy's global generator (and, for glass blur and impulse
noise, from a ``seed`` argument), so each call here seeds both from the (corruption, severity, image)
seed and restores numpy's global state afterwards.  Its functions need images of at least 32 x 32
pixels with 3 channels; a grey image is corrupted as three equal channels and returned as their mean.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch import nn
from torch.utils.data import Dataset

from ..core.norms import perturbation_norms
from ..core.seeds import derive_seed
from ..data.folders import UNREADABLE, load_image
from ..data.labels import imagenet_wnids
from .catalog import Condition, class_set

CORRUPTION_FAILED = -2  # label of an image whose corruption raised (unreadable files are -1)
MASKED_LOGIT = -1e4  # the logit of a class outside a 200-class set: below any real logit, finite in fp16
MIN_SIDE = 32  # the smallest image imagecorruptions accepts
SEEDED_BY_ARGUMENT = ("glass_blur", "impulse_noise")  # these draw from a seed argument, not the global state


def corrupt_tensor(image: torch.Tensor, corruption: str, severity: int, seed: int) -> torch.Tensor:
    """``image`` ``[C, H, W]`` in [0, 1] (C = 1 or 3) under ``corruption`` at ``severity`` (1-5)."""
    from imagecorruptions import corrupt

    channels, height, width = image.shape
    array = (image.clamp(0, 1).permute(1, 2, 0).numpy() * 255).round().astype(np.uint8)
    if channels == 1:
        array = np.repeat(array, 3, axis=2)
    factor = math.ceil(MIN_SIDE / min(height, width)) if min(height, width) < MIN_SIDE else 1
    if factor > 1:
        array = np.asarray(Image.fromarray(array).resize((width * factor, height * factor), Image.Resampling.NEAREST))
    state = np.random.get_state()
    try:
        np.random.seed(seed)
        extra = {"seed": seed} if corruption in SEEDED_BY_ARGUMENT else {}
        out = corrupt(np.ascontiguousarray(array), severity=severity, corruption_name=corruption, **extra)
    finally:
        np.random.set_state(state)
    if factor > 1:
        out = np.asarray(Image.fromarray(out).resize((width, height), Image.Resampling.BOX))
    result = torch.from_numpy(out.astype(np.float32) / 255.0).permute(2, 0, 1)
    return result.mean(0, keepdim=True) if channels == 1 else result.contiguous()


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
        return shifted, label, torch.cat(perturbation_norms(shifted[None], image[None])).float()  # [linf, l2]


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


class RestrictedLogits(nn.Module):
    """A 1000-class model seen through ImageNet-A's or -R's 200-class set: the other logits are set to
    :data:`MASKED_LOGIT`, so top-1/top-5 (and every attack's loss) range over the set only — what
    indexing the 200 logits gives, with labels kept in ImageNet-1k numbering."""

    def __init__(self, model: nn.Module, shift: str) -> None:
        super().__init__()
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

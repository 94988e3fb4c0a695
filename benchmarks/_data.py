"""Generated image folders and random-weight checkpoints for the benchmarks (nothing downloads)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import timm
import torch
from PIL import Image


def make_folder(root: Path, images: int, classes: int = 10) -> None:
    """``images`` JPEGs of 224-240 px (shifted crops of one random picture) in ``classes`` folders
    named by the first ImageNet wnids, so that 1000-class models take their labels."""
    from timm.data import ImageNetInfo

    wnids = ImageNetInfo("imagenet-1k").label_names()[:classes]
    rng = np.random.default_rng(0)
    base = rng.integers(0, 255, (256, 256, 3), dtype=np.uint8)
    for i in range(images):
        folder = root / wnids[i % classes]
        folder.mkdir(parents=True, exist_ok=True)
        shift = int(rng.integers(0, 32))
        crop = np.roll(base, shift, axis=1)[:224 + shift % 16, :224 + shift % 16]
        Image.fromarray(crop).save(folder / f"{i:05d}.JPEG", quality=85)


def random_checkpoint(path: Path, timm_name: str) -> Path:
    """A seeded random-weight state dict of ``timm_name`` saved at ``path`` (made once)."""
    if not path.exists():
        torch.manual_seed(0)
        torch.save(timm.create_model(timm_name).state_dict(), path)
    return path

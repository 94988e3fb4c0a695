"""Corrupting one image tensor with ImageNet-C's functions (the ``imagecorruptions`` package), seeded.

The package draws from numpy's global generator (and, for glass blur and impulse noise, from a
``seed`` argument), so each call here seeds both from the (corruption, severity, image) seed and
restores numpy's global state afterwards: a rerun, a resumed run and a run with other batch sizes
or DataLoader workers give the same corrupted image.

The benchmark's functions need images of at least 32 x 32 pixels with 3 channels.  Smaller images
(the 8x8 digits demo) are enlarged by the smallest whole factor that reaches 32 (each pixel a block),
corrupted there with the benchmark's parameters, and averaged back to their size (box filter: without
a corruption the round trip gives the image back exactly); a grey image is
corrupted as three equal channels and returned as their mean.  So on the digits a severity means
what it means on a 32 x 32 image seen at a quarter of the resolution.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from PIL import Image

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

"""Data sets held as arrays in memory (CIFAR, MNIST, CIFAR-10.1, CIFAR-10-C): uint8 images
``[N, H, W, C]`` (a memory-mapped ``.npy`` too), served as float32 ``[C, H, W]`` in [0, 1]."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from ..core.errors import UserError
from .examples import EvalData
from .labels import LabelSpace
from .subsets import choose_examples

CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


class ArrayImages(Dataset):
    """uint8 images ``[N, H, W, C]`` and as many labels (each reader checked both); an item is ``([C, H, W]
    float32 in [0, 1], label)``.

    Only the items read are converted, so a memory-mapped ``.npy`` of 50,000 images costs nothing
    until its examples are served."""

    def __init__(self, images: np.ndarray, labels: np.ndarray) -> None:
        self.images, self.labels = images, np.asarray(labels, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int):
        image = torch.from_numpy(np.array(self.images[i], dtype=np.float32) / 255.0).permute(2, 0, 1)
        return image.contiguous(), torch.tensor(self.labels[i])

    @property
    def input_size(self) -> tuple[int, int, int]:
        _, height, width, channels = self.images.shape
        return (channels, height, width)


def cifar_label_space(num_classes: int, names: Any = None) -> LabelSpace:
    """CIFAR-10's or CIFAR-100's classes (``names`` from the files' meta, in index order, if known)."""
    names = list(names) if names is not None else (list(CIFAR10_CLASSES) if num_classes == 10 else None)
    mapping = {str(n): i for i, n in enumerate(names)} if names else {str(i): i for i in range(num_classes)}
    return LabelSpace(mapping, num_classes, f"CIFAR-{num_classes} ({num_classes} classes)")


def array_data(
    name: str, images: np.ndarray, labels: np.ndarray, n_examples: int | None, selection: str, space: LabelSpace
) -> EvalData:
    """The chosen examples of an in-memory data set, at its fixed image size."""
    dataset = ArrayImages(images, labels)
    bad = [int(v) for v in np.unique(dataset.labels) if not 0 <= v < (space.num_classes or 0)]
    if bad:
        raise UserError(f"data {name}: label {bad[0]} is outside 0..{(space.num_classes or 0) - 1}")
    indices = choose_examples(dataset.labels.tolist(), n_examples, selection)
    return EvalData(name, dataset, indices, space, input_size=dataset.input_size)

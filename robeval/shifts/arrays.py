"""The shifted CIFAR data sets (CIFAR-10-C / CIFAR-100-C, Hendrycks & Dietterich 2019; CIFAR-10.1 v6,
Recht et al. 2018), read from their published ``.npy`` files, memory-mapped and never unpickled
(layouts: docs/shift.md, section "Published shifted sets").  The published CIFAR-C files have
n = 10,000 (the test set); the reader derives n from ``labels.npy`` and requires every corruption file
to have 5 n rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from ..core.errors import UserError
from ..data.arrays import ArrayImages
from .catalog import SEVERITIES, Condition

CIFAR_IMAGE = (32, 32, 3)  # height, width, channels of every published CIFAR array
CIFAR_10_1 = ("cifar10.1_v6_data.npy", "cifar10.1_v6_labels.npy")
CIFAR_C_LAYOUT = "the published layout is ROOT/<corruption>.npy and ROOT/labels.npy"
CIFAR_10_1_LAYOUT = f"the published layout is ROOT/{CIFAR_10_1[0]} and ROOT/{CIFAR_10_1[1]}"


def read_npy(path: Path, expected: str, layout: str) -> np.ndarray:
    """``path`` memory-mapped; one line naming ``expected`` for a missing file (and the data set's
    ``layout``), an object (pickled) array or anything that is not one plain ``.npy`` array."""
    if not path.is_file():
        raise UserError(f"file missing: {path} (expected {expected}; {layout})")
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        if isinstance(exc, ValueError) and ("object" in str(exc).lower() or "pickle" in str(exc).lower()):
            raise UserError(
                f"{path} holds Python objects, which robeval does not unpickle (expected {expected})"
            ) from None
        raise UserError(f"{path} is not a readable .npy array ({exc}; expected {expected})") from None
    if not isinstance(array, np.ndarray):  # an .npz archive
        raise UserError(f"{path} is an .npz archive, not one .npy array (expected {expected})")
    return array


def read_images(path: Path, rows: int, layout: str) -> np.ndarray:
    """A published CIFAR image array: uint8 ``(rows, 32, 32, 3)``."""
    expected = f"uint8 ({rows}, 32, 32, 3) images"
    images = read_npy(path, expected, layout)
    if images.dtype != np.uint8 or images.shape[1:] != CIFAR_IMAGE or len(images) != rows:
        raise UserError(f"{path} holds {images.dtype} {tuple(images.shape)}, expected {expected}")
    return images


def read_labels(path: Path, layout: str) -> np.ndarray:
    labels = read_npy(path, "integer labels (N,)", layout)
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise UserError(f"{path} holds {labels.dtype} {tuple(labels.shape)}, expected integer labels (N,)")
    return np.asarray(labels, dtype=np.int64)


def labels_per_severity(root: Path) -> np.ndarray:
    """The test set's labels from ``labels.npy``: 5 equal copies, one per severity."""
    path = root / "labels.npy"
    labels = read_labels(path, CIFAR_C_LAYOUT)
    if len(labels) == 0 or len(labels) % len(SEVERITIES):
        raise UserError(
            f"{path} has {len(labels)} labels, expected 5 severities x the test set (published: 50000 = 5 x 10000)"
        )
    copies = labels.reshape(len(SEVERITIES), -1)
    if not (copies == copies[0]).all():
        raise UserError(f"{path}: the five severities' labels differ (expected the test labels 5 times over)")
    return copies[0].copy()


def severity_rows(path: Path, severity: int, labels: np.ndarray) -> np.ndarray:
    """The images of ``severity`` in a ``<corruption>.npy`` of 5 x ``len(labels)`` rows."""
    n = len(labels)
    return read_images(path, len(SEVERITIES) * n, CIFAR_C_LAYOUT)[(severity - 1) * n : severity * n]


class SeverityImages(Dataset):
    """The run's examples under one condition of a CIFAR-10-C folder, as ``(image, label, [nan, nan])``
    (no clean image to measure the shift against).  The file is opened where it is first read (in
    the DataLoader's worker), so nothing of it is copied into the workers."""

    def __init__(self, root: str, condition: Condition, labels: np.ndarray) -> None:
        self.path, self.severity, self.labels = Path(root) / f"{condition.corruption}.npy", condition.severity, labels
        self._images: ArrayImages | None = None

    def __len__(self) -> int:
        return len(self.labels)

    def path_of(self, i: int) -> str:
        return f"{self.path} row {(self.severity - 1) * len(self.labels) + i}"

    def __getitem__(self, i: int):
        if self._images is None:
            self._images = ArrayImages(severity_rows(self.path, self.severity, self.labels), self.labels)
        image, label = self._images[i]
        return image, label, torch.full((2,), float("nan"))


def cifar10_1_arrays(root: Path) -> tuple[np.ndarray, np.ndarray]:
    """CIFAR-10.1 v6's images and labels from ROOT (or ROOT/datasets, as the repository keeps them)."""
    folder = root / "datasets" if not (root / CIFAR_10_1[0]).exists() and (root / "datasets").is_dir() else root
    labels = read_labels(folder / CIFAR_10_1[1], CIFAR_10_1_LAYOUT)
    return read_images(folder / CIFAR_10_1[0], len(labels), CIFAR_10_1_LAYOUT), labels

"""The embedded default: scikit-learn's 8x8 handwritten digits, split once into train and test."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import TensorDataset

from ..core.defaults import DIGITS
from .examples import EvalData
from .labels import LabelSpace
from .subsets import choose_examples


def digits_file() -> Path | None:
    """scikit-learn's own file of the digits (``load_digits`` parses it), found without importing
    scikit-learn: ``sklearn.datasets`` takes about a second to import, which every command on the demo
    and every worker process paid for 1797 rows of a CSV (None where a scikit-learn keeps it elsewhere)."""
    spec = importlib.util.find_spec("sklearn")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        if (path := Path(folder, "datasets", "data", "digits.csv.gz")).is_file():
            return path
    return None


@functools.lru_cache(maxsize=1)
def _digits_arrays_cached() -> tuple[np.ndarray, np.ndarray]:
    """Read once per process: 64 pixels (0-16) and the label per row, as ``load_digits`` reads them."""
    path = digits_file()
    if path is None:
        from sklearn.datasets import load_digits

        bunch = load_digits()
        pixels, labels = bunch.data, bunch.target
    else:
        rows = np.loadtxt(path, delimiter=",")
        pixels, labels = rows[:, :-1], rows[:, -1]
    images = (pixels.reshape(-1, 8, 8).astype(np.float32) / 16.0)[:, None, :, :]
    return images, labels.astype(np.int64)


def digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    """All 1797 scikit-learn digits as float32 [N,1,8,8] in [0,1] (pixel/16) and int64 labels (fresh copies,
    with plain strides: the cached view's channel axis has stride 4, which sends training through other
    kernels and changes a trained demo model's numbers)."""
    images, labels = _digits_arrays_cached()
    return images.copy(), labels.copy()


def digits_split(split: str) -> tuple[np.ndarray, np.ndarray]:
    """The fixed split: every 4th image (index % 4 == 3) is test (449 images), the rest train."""
    images, labels = digits_arrays()
    test = np.arange(len(labels)) % 4 == 3
    mask = test if split == "test" else ~test
    return images[mask], labels[mask]


def load_digits_data(n_examples: int | None, selection: str = "balanced") -> EvalData:
    images, labels = digits_split("test")
    space = LabelSpace({str(c): c for c in range(10)}, 10, "digits (10 classes)")
    return EvalData(
        DIGITS,
        TensorDataset(torch.from_numpy(images), torch.from_numpy(labels)),
        choose_examples(labels.tolist(), n_examples, selection),
        space,
        input_size=tuple(images.shape[1:]),
    )

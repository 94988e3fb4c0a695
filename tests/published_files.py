"""Tiny files in the published formats of CIFAR-10, CIFAR-100 and MNIST (../shared/REFERENCE.md
section 11), for the tests: the same layouts and encodings, fewer images."""

from __future__ import annotations

import gzip
import pickle
from pathlib import Path

import numpy as np


def images(n: int, side: int = 32, channels: int = 3, seed: int = 0) -> np.ndarray:
    """``[n, side, side, channels]`` uint8 images; each channel differs so the plane order is tested."""
    rng = np.random.default_rng(seed)
    out = rng.integers(0, 256, size=(n, side, side, channels), dtype=np.uint8)
    if channels == 3:
        out[:, 0, 0] = (255, 0, 128)  # the top-left pixel: red 255, green 0, blue 128
    return out


def labels(n: int, classes: int) -> np.ndarray:
    return np.arange(n, dtype=np.int64) % classes


def cifar_planes(batch: np.ndarray) -> np.ndarray:
    """[N, 32, 32, 3] -> CIFAR's N x 3072 (1024 red, 1024 green, 1024 blue, each row by row)."""
    return batch.transpose(0, 3, 1, 2).reshape(len(batch), -1)


def write_pickle(path: Path, obj: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(obj, protocol=2))


def cifar10_python(root: Path, n: int = 30) -> tuple[np.ndarray, np.ndarray]:
    folder = root / "cifar-10-batches-py"
    x, y = images(n), labels(n, 10)
    batch = {b"batch_label": b"testing batch 1 of 1", b"labels": y.tolist(), b"data": cifar_planes(x),
             b"filenames": [f"img_{i}.png".encode() for i in range(n)]}  # fmt: skip
    write_pickle(folder / "test_batch", batch)
    for i in range(1, 6):
        write_pickle(folder / f"data_batch_{i}", {**batch, b"labels": labels(n, 10)[::-1].tolist()})
    names = [b"airplane", b"automobile", b"bird", b"cat", b"deer", b"dog", b"frog", b"horse", b"ship", b"truck"]
    write_pickle(folder / "batches.meta", {b"label_names": names, b"num_cases_per_batch": n})
    return x, y


def cifar10_binary(root: Path, n: int = 30) -> tuple[np.ndarray, np.ndarray]:
    folder = root / "cifar-10-batches-bin"
    folder.mkdir(parents=True)
    x, y = images(n, seed=1), labels(n, 10)
    records = np.concatenate([y.astype(np.uint8)[:, None], cifar_planes(x)], axis=1)
    (folder / "test_batch.bin").write_bytes(records.tobytes())
    return x, y


def cifar100_python(root: Path, n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    x, y = images(n, seed=2), labels(n, 100)
    batch = {b"data": cifar_planes(x), b"fine_labels": y.tolist(), b"coarse_labels": (y // 5).tolist()}
    write_pickle(root / "cifar-100-python" / "test", batch)
    write_pickle(root / "cifar-100-python" / "meta", {b"fine_label_names": [f"c{i}".encode() for i in range(100)]})
    return x, y


def cifar100_binary(root: Path, n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    folder = root / "cifar-100-binary"
    folder.mkdir(parents=True)
    x, y = images(n, seed=3), labels(n, 100)
    records = np.concatenate([(y // 5).astype(np.uint8)[:, None], y.astype(np.uint8)[:, None], cifar_planes(x)], 1)
    (folder / "test.bin").write_bytes(records.tobytes())
    return x, y


def idx_bytes(array: np.ndarray) -> bytes:
    magic = 0x00000800 + array.ndim
    header = magic.to_bytes(4, "big") + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    return header + array.astype(np.uint8).tobytes()


def mnist(root: Path, n: int = 30, gz: bool = False, torchvision_layout: bool = False) -> tuple[np.ndarray, np.ndarray]:
    folder = root / "MNIST" / "raw" if torchvision_layout else root
    folder.mkdir(parents=True, exist_ok=True)
    x, y = images(n, side=28, channels=1, seed=4)[..., 0], labels(n, 10)
    for name, array in (("t10k-images-idx3-ubyte", x), ("t10k-labels-idx1-ubyte", y)):
        data = idx_bytes(array)
        if gz:
            (folder / f"{name}.gz").write_bytes(gzip.compress(data))
        else:
            (folder / name).write_bytes(data)
    return x[..., None], y

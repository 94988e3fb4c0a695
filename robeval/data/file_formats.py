"""The published files of CIFAR-10, CIFAR-100 and MNIST, read where their downloads unpack inside
``--data-dir`` (the layouts: :data:`FORMATS` and docs/datasets.md; the formats: ../shared/REFERENCE.md
section 11).  CIFAR's pickled batches are read by an unpickler that rebuilds arrays and nothing else
(:class:`ArraysOnlyUnpickler`).  Each reader returns uint8 images ``[N, H, W, C]``, int64 labels and
the class names when the files carry them.
"""

from __future__ import annotations

import gzip
import pickle
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import UserError

Arrays = tuple[np.ndarray, np.ndarray, "list[str] | None"]
CIFAR_PIXELS = 3 * 32 * 32
ALLOWED_GLOBALS = frozenset(
    {
        ("numpy.core.multiarray", "_reconstruct"),  # how numpy 1 (and CIFAR's Python 2 files) pickle an array
        ("numpy._core.multiarray", "_reconstruct"),  # the same under numpy 2
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("_codecs", "encode"),  # how Python 3 writes an array's bytes at protocol 2 (str -> latin-1 bytes)
    }
)


class RefusedGlobal(pickle.UnpicklingError):
    """A pickle named a global outside :data:`ALLOWED_GLOBALS`."""


class ArraysOnlyUnpickler(pickle.Unpickler):
    """Reads CIFAR's python-version batches without running anything from the file.

    The published batches are pickled dicts of numpy arrays, lists, ints and byte strings.  Python's
    ``pickle.load`` would call any function a file names (a tampered download runs code on load), and
    ``numpy.load(allow_pickle=True)`` is the same.  This unpickler resolves only the globals those
    files need to rebuild a numpy array; any other global (``os.system``, ``builtins.eval``, ...) is
    refused before it is looked up, so nothing in the file is executed."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in ALLOWED_GLOBALS:
            raise RefusedGlobal(f"{module}.{name}")
        return super().find_class(module, name)


def load_arrays_pickle(path: Path) -> dict[Any, Any]:
    """A pickled dict of arrays, lists and strings (``encoding="bytes"``: CIFAR's files were written
    by Python 2, so their keys come back as ``b"data"``, ``b"labels"``, ...)."""
    try:
        with open(path, "rb") as handle:
            out = ArraysOnlyUnpickler(handle, encoding="bytes").load()
    except RefusedGlobal as exc:
        raise UserError(
            f"{path} asks to run {exc} when unpickled: refused (CIFAR's batches hold only arrays and lists; "
            "is this file tampered with?)"
        ) from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as exc:
        why = " ".join(str(exc).split())  # one line, whatever the exception's text holds
        raise UserError(f"{path} is not a CIFAR python-version batch ({type(exc).__name__}: {why})"[:300]) from None
    if not isinstance(out, dict):
        raise UserError(f"{path} is not a CIFAR python-version batch (holds {type(out).__name__}, not a dict)")
    return out


@dataclass(frozen=True)
class FileFormat:
    """One published format of a data set: where it unpacks and which files hold each split."""

    title: str  # "python version"
    folder: str  # relative to --data-dir; "" = the folder itself
    files: Mapping[str, tuple[str, ...]]  # split -> its files, in order
    read: Callable[[list[Path], Path], Arrays]  # (the split's files, the format's folder) -> arrays

    def located(self, data_dir: Path, split: str) -> list[Path] | None:
        """The split's files under ``data_dir`` (each possibly gzipped), or None if one is missing."""
        folder = data_dir / self.folder
        found = [next((p for p in (folder / n, folder / f"{n}.gz") if p.is_file()), None) for n in self.files[split]]
        return None if any(p is None for p in found) else [p for p in found if p is not None]


def _cifar_images(flat: np.ndarray, path: Path) -> np.ndarray:
    """CIFAR's 3072 bytes per image (channel planes, rows) as ``[N, 32, 32, 3]``."""
    flat = np.asarray(flat)
    if flat.dtype != np.uint8 or flat.ndim != 2 or flat.shape[1] != CIFAR_PIXELS:
        raise UserError(f"{path}: images are not N x 3072 uint8 (got {flat.dtype} {tuple(flat.shape)})")
    return np.ascontiguousarray(flat.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))


def _pickled_batch(path: Path, label_key: bytes) -> tuple[np.ndarray, np.ndarray]:
    batch = load_arrays_pickle(path)
    if b"data" not in batch or label_key not in batch:
        raise UserError(f"{path} has no {label_key.decode()!r} and 'data' entries: not a CIFAR batch of this data set")
    images, labels = _cifar_images(batch[b"data"], path), np.asarray(batch[label_key], dtype=np.int64)
    if len(labels) != len(images):
        raise UserError(f"{path}: {len(images)} images but {len(labels)} labels")
    return images, labels


def _names_from_pickle(path: Path, key: bytes) -> list[str] | None:
    if not path.is_file():
        return None
    names = load_arrays_pickle(path).get(key)
    return [n.decode() if isinstance(n, bytes) else str(n) for n in names] if isinstance(names, list) else None


def _python_reader(label_key: bytes, meta: str, names_key: bytes) -> Callable[[list[Path], Path], Arrays]:
    def read(files: list[Path], folder: Path) -> Arrays:
        parts = [_pickled_batch(f, label_key) for f in files]
        images, labels = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
        return images, labels, _names_from_pickle(folder / meta, names_key)

    return read


def _binary_reader(label_bytes: int, meta: str) -> Callable[[list[Path], Path], Arrays]:
    """Records of ``label_bytes`` label bytes (CIFAR-100: coarse, then fine; the last is used) and the pixels."""

    def read(files: list[Path], folder: Path) -> Arrays:
        record = label_bytes + CIFAR_PIXELS
        parts = []
        for path in files:
            raw = np.fromfile(path, dtype=np.uint8)
            if raw.size == 0 or raw.size % record:
                raise UserError(f"{path}: {raw.size} bytes is not a whole number of {record}-byte CIFAR records")
            rows = raw.reshape(-1, record)
            parts.append((_cifar_images(rows[:, label_bytes:], path), rows[:, label_bytes - 1].astype(np.int64)))
        names_file = folder / meta
        names = [n.strip() for n in names_file.read_text().splitlines() if n.strip()] if names_file.is_file() else None
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), names

    return read


IDX_MAGIC = {3: 0x00000803, 1: 0x00000801}  # images (3 dimensions), labels (1)


def read_idx(path: Path, dims: int) -> np.ndarray:
    """An idx file (big-endian int32 magic, int32 sizes, uint8 data), plain or gzipped."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise UserError(f"{path}: broken gzip file ({exc})") from None
    header = 4 * (1 + dims)
    magic = int.from_bytes(raw[:4], "big") if len(raw) >= 4 else None
    if magic != IDX_MAGIC[dims] or len(raw) < header:
        raise UserError(
            f"{path} is not an idx file of {dims} dimension(s) (magic {magic!r}, expected {IDX_MAGIC[dims]:#010x})"
        )
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(dims))
    if len(raw) - header != int(np.prod(shape)):
        raise UserError(f"{path}: header says {shape} but holds {len(raw) - header} data bytes")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(shape)


def _read_mnist(files: list[Path], folder: Path) -> Arrays:
    images, labels = read_idx(files[0], 3), read_idx(files[1], 1).astype(np.int64)
    if len(images) != len(labels):
        raise UserError(f"{files[0]} has {len(images)} images but {files[1]} {len(labels)} labels")
    return np.ascontiguousarray(images[..., None]), labels, None


CIFAR10_TRAIN = tuple(f"data_batch_{i}" for i in range(1, 6))
MNIST_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
# Each published data set's formats, tried in this order (robeval.data.published: the sets).
FORMATS: dict[str, tuple[FileFormat, ...]] = {
    "cifar10": (
        FileFormat("python version", "cifar-10-batches-py", {"train": CIFAR10_TRAIN, "test": ("test_batch",)},
                   _python_reader(b"labels", "batches.meta", b"label_names")),
        FileFormat("binary version", "cifar-10-batches-bin",
                   {"train": tuple(f"{n}.bin" for n in CIFAR10_TRAIN), "test": ("test_batch.bin",)},
                   _binary_reader(1, "batches.meta.txt")),
    ),
    "cifar100": (
        FileFormat("python version", "cifar-100-python", {"train": ("train",), "test": ("test",)},
                   _python_reader(b"fine_labels", "meta", b"fine_label_names")),
        FileFormat("binary version", "cifar-100-binary", {"train": ("train.bin",), "test": ("test.bin",)},
                   _binary_reader(2, "fine_label_names.txt")),
    ),
    "mnist": (
        FileFormat("idx files", "", MNIST_FILES, _read_mnist),
        FileFormat("idx files (torchvision's layout)", "MNIST/raw", MNIST_FILES, _read_mnist),
    ),
}  # fmt: skip


def read_published(name: str, data_dir: Path, split: str, where: str) -> Any:
    """The split (``test`` or ``train``, as make_config checked) in the first format found under ``data_dir``;
    one line naming every file expected otherwise."""
    formats = FORMATS[name]
    for fmt in formats:
        files = fmt.located(data_dir, split)
        if files is not None:
            return fmt.read(files, data_dir / fmt.folder)
    expected = " or ".join(
        f"{', '.join(str(data_dir / f.folder / n) for n in f.files[split])} ({f.title})" for f in formats
    )
    raise UserError(f"{name} {split} split not found: expected {expected}; published at {where} (--data-dir DIR)")

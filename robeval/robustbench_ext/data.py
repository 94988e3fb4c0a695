"""Evaluation data: the embedded digits set, or an ImageNet-style folder streamed from disk.

Both give batches of ``(example indices, [0,1] images, labels)``.  A batch's composition depends
only on its index, so a run can be resumed or split across workers batch by batch.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from ..errors import UserError
from ..models.wrapper import ModelMeta
from .labels import LabelSpace, folder_label_space

DIGITS = "digits"
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


@functools.lru_cache(maxsize=1)
def _digits_arrays_cached() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    bunch = load_digits()  # parses a gzipped CSV: read once per process
    images = (bunch.images.astype(np.float32) / 16.0)[:, None, :, :]
    return images, bunch.target.astype(np.int64)


def digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    """All 1797 scikit-learn digits as float32 [N,1,8,8] in [0,1] (pixel/16) and int64 labels (fresh copies)."""
    images, labels = _digits_arrays_cached()
    return images.copy(), labels.copy()


def digits_split(split: str) -> tuple[np.ndarray, np.ndarray]:
    """The fixed split: every 4th image (index % 4 == 3) is test (449 images), the rest train."""
    images, labels = digits_arrays()
    test = np.arange(len(labels)) % 4 == 3
    mask = test if split == "test" else ~test
    return images[mask], labels[mask]


def balanced_order(labels: Sequence[int]) -> list[int]:
    """All indices in class round-robin order (the first of every class, then the second, ...)."""
    by_class: dict[int, list[int]] = {}
    for index, label in enumerate(labels):
        by_class.setdefault(int(label), []).append(index)
    queues = [by_class[c] for c in sorted(by_class)]
    longest = max((len(q) for q in queues), default=0)
    return [queue[rank] for rank in range(longest) for queue in queues if rank < len(queue)]


def balanced_subset(labels: Sequence[int], n: int | None, usable: Callable[[int], bool] | None = None) -> list[int]:
    """First ``n`` indices of a class round-robin (class-balanced, deterministic), in ascending order.

    ``usable(index)`` (an image that decodes) lets the subset pass over broken files and fill up
    from the next images of the round-robin, so ``n`` images are evaluated while ``n`` usable exist."""
    total = len(labels)
    if n is None:
        return list(range(total))
    if n <= 0:
        raise UserError(f"--n-examples must be positive, got {n}")
    if n > total:
        raise UserError(f"--n-examples {n} is more than the {total} images available")
    chosen: list[int] = []
    for index in balanced_order(labels):
        if len(chosen) == n:
            break
        if usable is None or usable(index):
            chosen.append(index)
    return sorted(chosen)


class _TensorDataset(Dataset):
    def __init__(self, images: np.ndarray, labels: np.ndarray) -> None:
        self.images, self.labels = torch.from_numpy(images), torch.from_numpy(labels)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int):
        return self.images[i], self.labels[i]


@dataclass
class EvalData:
    """A fixed list of examples of one data set, served in batches."""

    name: str  # "digits" or the folder path
    dataset: Dataset
    indices: list[int]  # example indices (into ``dataset``) evaluated, ascending
    label_space: LabelSpace
    passed_over: list[str] = field(default_factory=list)  # unreadable files a subset was filled past
    input_size: tuple[int, ...] | None = None  # fixed image shape (digits); None: resized to each model
    crop_pct: float | None = None  # read every model's images with this crop (1.0: pre-cropped data such as ImageNet-C)

    @property
    def num_classes(self) -> int | None:
        return self.label_space.num_classes

    @property
    def identity(self) -> str:
        """Names the example set: data name plus a hash of the chosen indices."""
        digest = hashlib.sha256(",".join(map(str, self.indices)).encode()).hexdigest()[:16]
        return f"{self.name}#{len(self.indices)}#{digest}"

    def for_model(self, meta: ModelMeta) -> "EvalData":
        """The same examples, read with ``meta``'s eval transform (image folders resize to each model)."""
        if not isinstance(self.dataset, TolerantImageFolder):
            return self
        if self.crop_pct is not None:
            meta = replace(meta, crop_pct=self.crop_pct)
        return replace(self, dataset=self.dataset.with_transform(eval_transform(meta), tuple(meta.input_size)))

    def info(self) -> dict[str, Any]:
        """What run.json says of the data."""
        return {"data": self.name, "identity": self.identity, "n": len(self.indices), "num_classes": self.num_classes,
                "labels": self.label_space.description, "passed_over": list(self.passed_over)}

    def num_batches(self, batch_size: int) -> int:
        return (len(self.indices) + batch_size - 1) // batch_size

    def batch_indices(self, batch_size: int, b: int) -> list[int]:
        """Example indices of batch ``b``: depends only on ``b`` and the batch size."""
        return self.indices[b * batch_size:(b + 1) * batch_size]

    def batches(self, batch_size: int, workers: int = 0, pin_memory: bool = False,
                only: Iterable[int] | None = None) -> Iterator[tuple[int, torch.Tensor, torch.Tensor, torch.Tensor]]:
        """Yield ``(batch number, example indices, images, labels)``; ``only`` limits the batch numbers.

        Skipped batches are never read from disk.
        """
        wanted = range(self.num_batches(batch_size)) if only is None else only
        yield from self.batches_of(self.dataset, batch_size, wanted, workers, pin_memory)

    def batches_of(self, dataset: Dataset, batch_size: int, only: Iterable[int], workers: int = 0,
                   pin_memory: bool = False) -> Iterator[tuple]:
        """Like :meth:`batches` over another dataset of the same examples (a shifted condition's),
        yielding every field the dataset gives after the batch number and indices."""
        wanted = sorted(set(only))
        plan = [self.batch_indices(batch_size, b) for b in wanted]
        for b, idx, fields in zip(wanted, plan, self._loader(dataset, plan, workers, pin_memory)):
            yield b, torch.tensor(idx, dtype=torch.long), *fields

    @staticmethod
    def _loader(dataset: Dataset, plan: list[list[int]], workers: int, pin_memory: bool) -> Iterable:
        if not plan:
            return []
        return DataLoader(dataset, batch_sampler=plan, num_workers=workers, pin_memory=pin_memory)


def load_digits_data(n_examples: int | None) -> EvalData:
    images, labels = digits_split("test")
    space = LabelSpace({str(c): c for c in range(10)}, 10, "digits (10 classes)")
    return EvalData(DIGITS, _TensorDataset(images, labels), balanced_subset(labels.tolist(), n_examples), space,
                    input_size=tuple(images.shape[1:]))


def eval_transform(meta: ModelMeta):
    """The model's eval transform without normalization (it lives inside the model)."""
    from torchvision import transforms
    from torchvision.transforms import InterpolationMode

    size = meta.input_size[-1]
    resize = int(round(size / meta.crop_pct))
    mode = {"bicubic": InterpolationMode.BICUBIC, "bilinear": InterpolationMode.BILINEAR,
            "nearest": InterpolationMode.NEAREST}.get(meta.interpolation, InterpolationMode.BICUBIC)
    steps = [transforms.Resize(resize, interpolation=mode), transforms.CenterCrop(size)]
    if meta.input_size[0] == 1:
        steps.append(transforms.Grayscale(1))
    steps.append(transforms.ToTensor())
    return transforms.Compose(steps)


UNREADABLE = -1  # label returned for an image file that cannot be decoded


class TolerantImageFolder:
    """torchvision's ImageFolder whose unreadable files come back as label -1 instead of raising.

    Half-copied ImageNet folders hold truncated JPEGs and stray non-images; the engine drops those
    examples, counts them and names them (``--strict-data`` turns them into an error).
    """

    def __init__(self, root: str, transform, input_size: tuple[int, int, int]) -> None:
        from torchvision.datasets import ImageFolder

        self.folder = ImageFolder(root, transform=transform, is_valid_file=lambda p: p.lower().endswith(IMAGE_EXTENSIONS))
        self.input_size = input_size
        self.classes = self.folder.classes
        self.samples = self.folder.samples
        self.targets = self.folder.targets

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int):
        path, label = self.samples[i]
        try:
            image = self.folder.loader(path)
            return self.folder.transform(image), label
        except Exception:  # PIL raises OSError, SyntaxError, ValueError, ... on broken files
            return torch.zeros(self.input_size), UNREADABLE

    def with_transform(self, transform, input_size: tuple[int, int, int]) -> "TolerantImageFolder":
        """A shallow copy reading the same files through another transform."""
        import copy

        other = copy.copy(self)
        other.folder = copy.copy(self.folder)
        other.folder.transform, other.input_size = transform, input_size
        return other

    def path_of(self, i: int) -> str:
        return self.samples[i][0]

    def decodes(self, i: int) -> bool:
        """Whether image ``i`` decodes (a whole decode: a truncated JPEG fails only there)."""
        try:
            self.folder.loader(self.samples[i][0])
            return True
        except Exception:  # PIL raises OSError, SyntaxError, ValueError, ... on broken files
            return False


def load_folder_data(path: str | Path, meta: ModelMeta, n_examples: int | None,
                     subset: list[str] | None = None, class_map: str | None = None) -> EvalData:
    """An ImageNet-style folder ``PATH/<class>/*.JPEG``; see :mod:`.labels` for how folders become classes."""
    root = Path(path)
    if not root.exists():
        raise UserError(f"data folder not found: {root}")
    if not root.is_dir():
        raise UserError(f"data path is not a folder: {root}")
    classes = sorted(d.name for d in root.iterdir() if d.is_dir() and not d.name.startswith("."))
    if not classes:
        raise UserError(f"data folder {root} has no class sub-folders (expected {root}/<class>/<image>)")
    try:
        dataset = TolerantImageFolder(str(root), eval_transform(meta), tuple(meta.input_size))
    except (FileNotFoundError, RuntimeError) as exc:
        raise UserError(f"data folder {root} has no images ({str(exc).splitlines()[0][:120]})") from None
    space = folder_label_space(dataset.classes, class_map)
    dataset.samples = dataset.folder.samples = [(p, space.mapping[dataset.classes[t]]) for p, t in dataset.samples]
    dataset.targets = [t for _, t in dataset.samples]
    passed_over: list[str] = []
    if subset is not None:
        from .subsets import select

        indices = select(dataset.samples, root, subset, n_examples)
    else:
        def usable(i: int) -> bool:
            if dataset.decodes(i):
                return True
            passed_over.append(dataset.path_of(i))
            return False

        indices = balanced_subset(dataset.targets, n_examples, usable if n_examples is not None else None)
        if n_examples is not None and len(indices) < n_examples:
            raise UserError(f"--n-examples {n_examples}: only {len(indices)} images of {root} can be read "
                            f"({len(passed_over)} unreadable)")
    return EvalData(str(root.resolve()), dataset, indices, space, passed_over)


def load_data(data: str, meta: ModelMeta, n_examples: int | None, subset: list[str] | None = None,
              class_map: str | None = None) -> EvalData:
    if data == DIGITS:
        if subset is not None or class_map is not None:
            raise UserError("--subset / --subset-file / --class-map apply to an image folder, not to the digits data")
        return load_digits_data(n_examples)
    return load_folder_data(data, meta, n_examples, subset, class_map)

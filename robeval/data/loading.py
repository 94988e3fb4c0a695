"""The data a run names (``--data``): a registered data set (the embedded ``digits``; ``cifar10``,
``cifar100`` and ``mnist`` read from ``--data-dir``) or an ImageNet-style image folder.

A run's configuration is read by attribute (``data``, ``data_dir``, ``split``, ``selection``,
``n_examples``, ``subset``, ``class_map``): the evaluation's config, duck-typed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..defaults import DIGITS
from ..errors import UserError
from ..options import EvalConfig
from ..registry import Registry
from .arrays import array_data, cifar_label_space
from .digits import load_digits_data
from .examples import EvalData, ImageSpec
from .file_formats import FileFormat, cifar10_formats, cifar100_formats, mnist_formats, read_published
from .folders import load_folder_data
from .labels import LabelSpace

CIFAR_WHERE = "https://www.cs.toronto.edu/~kriz/cifar.html"
MNIST_WHERE = "https://yann.lecun.com/exdb/mnist/ (mirrors: torchvision.datasets.MNIST)"


@dataclass(frozen=True)
class PublishedSet:
    """A data set read from its published files under ``--data-dir``."""

    name: str
    title: str
    num_classes: int
    formats: tuple[FileFormat, ...]
    where: str  # where the files are published

    def label_space(self, names: list[str] | None) -> LabelSpace:
        if self.name.startswith("cifar"):
            return cifar_label_space(self.num_classes, names)
        return LabelSpace({str(c): c for c in range(self.num_classes)}, self.num_classes, f"{self.title} (10 classes)")

    def load(self, config: EvalConfig) -> EvalData:
        split = getattr(config, "split", "test")
        images, labels, names = read_published(self.name, self.formats, Path(config.data_dir), split, self.where)
        selection = getattr(config, "selection", "balanced")
        name = f"{self.name} ({split})"
        return array_data(name, images, labels, config.n_examples, selection, self.label_space(names))


PUBLISHED: Registry[PublishedSet] = Registry("data set", "robeval run --help (--data)")
for _set in (
    PublishedSet("cifar10", "CIFAR-10", 10, cifar10_formats(), CIFAR_WHERE),
    PublishedSet("cifar100", "CIFAR-100", 100, cifar100_formats(), CIFAR_WHERE),
    PublishedSet("mnist", "MNIST", 10, mnist_formats(), MNIST_WHERE),
):
    PUBLISHED.add(_set.name, _set)

IN_MEMORY = (DIGITS, *PUBLISHED)  # data sets served from memory: no DataLoader workers needed


def is_in_memory(data: str) -> bool:
    return data in IN_MEMORY


def load_data(config: EvalConfig, spec: ImageSpec) -> EvalData:
    """The examples of the run's ``--data`` (see the module docstring)."""
    data = config.data
    if data in IN_MEMORY and (config.subset is not None or config.class_map is not None):
        raise UserError(f"--subset / --subset-file / --class-map apply to an image folder, not to --data {data}")
    if data not in PUBLISHED and getattr(config, "split", "test") != "test":
        raise UserError(f"--split applies to --data {', '.join(PUBLISHED)}, not to --data {data}")
    if data == DIGITS:
        return load_digits_data(config.n_examples, getattr(config, "selection", "balanced"))
    if data in PUBLISHED:
        return PUBLISHED.get(data).load(config)
    if getattr(config, "selection", "balanced") != "balanced":
        raise UserError(
            "--selection first applies to --data digits/cifar10/cifar100/mnist; an image folder takes --subset"
        )
    try:
        return load_folder_data(data, spec, config.n_examples, config.subset, config.class_map)
    except UserError as exc:
        hint = published_inside(Path(data))
        raise UserError(
            f"{exc}; it holds {hint[1]}: --data {hint[0]} --data-dir {data}" if hint else str(exc)
        ) from None


def published_inside(folder: Path) -> tuple[str, str] | None:
    """(data set, its folder) when ``folder`` holds a published data set's download (a --data-dir given as --data)."""
    for dataset in PUBLISHED.values():
        for fmt in dataset.formats:
            if fmt.folder and (folder / fmt.folder).is_dir():
                return dataset.name, fmt.folder
    return None

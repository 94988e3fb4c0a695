"""The data sets ``--data`` names besides image folders, as data (torch-free): the embedded ``digits``
and the published sets read from ``--data-dir`` (``cifar10``, ``cifar100``, ``mnist``), and the rules
of the data options, which :func:`robeval.evaluation.config.make_config` checks before torch loads.
How their files are read is :mod:`.loading`'s."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.defaults import DIGITS
from ..core.errors import UserError

if TYPE_CHECKING:
    from ..options import EvalConfig

CIFAR_WHERE = "https://www.cs.toronto.edu/~kriz/cifar.html"
MNIST_WHERE = "https://yann.lecun.com/exdb/mnist/ (mirrors: torchvision.datasets.MNIST)"


@dataclass(frozen=True)
class PublishedSet:
    """A data set read from its published files under ``--data-dir``."""

    name: str
    title: str
    num_classes: int
    where: str  # where the files are published


PUBLISHED = {
    published.name: published
    for published in (
        PublishedSet("cifar10", "CIFAR-10", 10, CIFAR_WHERE),
        PublishedSet("cifar100", "CIFAR-100", 100, CIFAR_WHERE),
        PublishedSet("mnist", "MNIST", 10, MNIST_WHERE),
    )
}

IN_MEMORY = (DIGITS, *PUBLISHED)  # data sets served from memory: no DataLoader workers needed


def check_data_options(config: EvalConfig, shift_copy: bool = False) -> None:
    """The options that apply to some data only.  ``shift_copy``: --data is a shift's own copy, whose kind
    judged --subset, --class-map and --selection (its copy is arrays or folders)."""
    data = config.data
    if not shift_copy and data in IN_MEMORY and (config.subset is not None or config.class_map is not None):
        raise UserError(f"--subset / --subset-file / --class-map apply to an image folder, not to --data {data}")
    if data not in PUBLISHED and config.split != "test":
        raise UserError(f"--split applies to --data {', '.join(PUBLISHED)}, not to --data {data}")
    if not shift_copy and data not in IN_MEMORY and config.selection != "balanced":
        raise UserError(
            "--selection first applies to --data digits/cifar10/cifar100/mnist; an image folder takes --subset"
        )

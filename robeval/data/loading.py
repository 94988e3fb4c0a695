"""The data a run names (``--data``): a registered data set (the embedded ``digits``; ``cifar10``,
``cifar100`` and ``mnist`` read from ``--data-dir``) or an ImageNet-style image folder.

Which options apply to which data ``make_config`` judged (:func:`.published.check_data_options`).
"""

from __future__ import annotations

from pathlib import Path

from ..core.defaults import DIGITS
from ..core.errors import UserError
from ..options import EvalConfig
from .arrays import array_data, cifar_label_space
from .digits import load_digits_data
from .examples import EvalData, ImageSpec
from .file_formats import FORMATS, read_published
from .folders import load_folder_data
from .labels import LabelSpace
from .published import PUBLISHED, PublishedSet


def load_published(dataset: PublishedSet, config: EvalConfig) -> EvalData:
    images, labels, names = read_published(dataset.name, Path(config.data_dir), config.split, dataset.where)
    n = dataset.num_classes
    if dataset.name.startswith("cifar"):
        space = cifar_label_space(n, names)
    else:
        space = LabelSpace({str(c): c for c in range(n)}, n, f"{dataset.title} (10 classes)")
    return array_data(f"{dataset.name} ({config.split})", images, labels, config.n_examples, config.selection, space)


def load_data(config: EvalConfig, spec: ImageSpec) -> EvalData:
    """The examples of the run's ``--data`` (see the module docstring)."""
    data = config.data
    if data == DIGITS:
        return load_digits_data(config.n_examples, config.selection)
    if data in PUBLISHED:
        return load_published(PUBLISHED[data], config)
    try:
        return load_folder_data(data, spec, config.n_examples, config.subset, config.class_map)
    except UserError as exc:
        hint = published_inside(Path(data))
        raise UserError(
            f"{exc}; it holds {hint[1]}: --data {hint[0]} --data-dir {data}" if hint else str(exc)
        ) from None


def published_inside(folder: Path) -> tuple[str, str] | None:
    """(data set, its folder) when ``folder`` holds a published data set's download (a --data-dir given as --data)."""
    for name, formats in FORMATS.items():
        for fmt in formats:
            if fmt.folder and (folder / fmt.folder).is_dir():
                return name, fmt.folder
    return None

"""RobustBench's data sets and threat models as data: how its ``benchmark()`` reads each data set's test
examples (robeval's run options for them), how a model takes its images, its default eps per threat
model (REFERENCE: RobustBench conventions), and its named ImageNet preprocessings.

RobustBench's models normalise inside, so the image configuration of every entry has mean 0, std 1:
robeval's wrapper in front of such a model leaves the [0,1] pixels as they are.  A fixed example list
(docs/datasets.md, section "Fixed lists of images") names images by their path relative to the data
folder (``n01440764/ILSVRC2012_val_00000293.JPEG``), one per line, evaluated in the list's order."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..core.errors import UserError, lookup
from ..data.published import IN_MEMORY
from ..data.subsets import read_list
from ..model_config import IMAGENET_CONFIG
from ..models.catalog import DIGITS_CFG

ROBUSTBENCH_5000 = "robustbench-5000"
LISTED = "listed"  # a run's examples from a list that is not (a prefix of) RobustBench's
# RobustBench's list of 5,000 ImageNet validation images (its helper_files/imagenet_test_image_ids.txt,
# RobustBench/robustbench@78fcc9e): data, shipped here so the subset needs no robustbench package.
ROBUSTBENCH_LIST = "imagenet_test_image_ids.txt"

ADVERSARIAL = ("Linf", "L2")  # the threat models benchmark() attacks (robeval's norms)
CORRUPTIONS = ("corruptions", "corruptions_3d")  # RobustBench's other two: shifts, not attacks
THREAT_MODELS = ADVERSARIAL + CORRUPTIONS
NO_NORMALIZATION: dict[str, Any] = dict(mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0))


@dataclass(frozen=True)
class BenchmarkData:
    """One of RobustBench's data sets (or robeval's digits demo, so benchmark() runs in seconds)."""

    name: str
    image_config: dict[str, Any]  # a model's pretrained_cfg: input size, classes, crop, interpolation
    eps: dict[str, str]  # RobustBench's eps per threat model (none: the caller must give one)
    run_data: Callable[[str], dict[str, Any]]  # data_dir -> the run options that read its test examples
    preprocessed: bool = False  # whether benchmark() takes a named preprocessing (ImageNet's)
    examples: str = "first"  # the examples RobustBench evaluates (example_choice's word for them)

    def default_eps(self, threat_model: str) -> str:
        if threat_model not in self.eps:
            raise UserError(f"RobustBench has no default eps for {self.name} {threat_model}: pass eps=")
        return self.eps[threat_model]


def _cifar(name: str, classes: int, eps: dict[str, str]) -> BenchmarkData:
    """A CIFAR test set: the first N of the published test split, read from ``data_dir`` as
    RobustBench (torchvision) keeps it."""
    config = dict(
        input_size=(3, 32, 32), num_classes=classes, interpolation="bilinear", crop_pct=1.0, **NO_NORMALIZATION
    )
    return BenchmarkData(
        name, config, eps, lambda data_dir: dict(data=name, data_dir=data_dir, split="test", selection="first")
    )


BENCHMARK_DATA = {
    data.name: data
    for data in (
        _cifar("cifar10", 10, {"Linf": "8/255", "L2": "0.5"}),
        _cifar("cifar100", 100, {"Linf": "8/255"}),
        BenchmarkData(
            "imagenet",
            dict(IMAGENET_CONFIG, interpolation="bilinear", **NO_NORMALIZATION),
            {"Linf": "4/255"},
            lambda data_dir: dict(data=str(Path(data_dir) / "val"), subset=ROBUSTBENCH_5000),  # val/<wnid>/*.JPEG
            preprocessed=True,
            examples=ROBUSTBENCH_5000,
        ),
        BenchmarkData(  # robeval's embedded digits (no data_dir): the first N, as RobustBench takes CIFAR's
            "digits",
            dict(DIGITS_CFG, mean=(0.0,), std=(1.0,)),
            {"Linf": "8/255", "L2": "0.5"},
            lambda data_dir: dict(data="digits", selection="first"),
        ),
    )
}

# RobustBench's named ImageNet preprocessings that robeval's folder reader does the same way: resize
# the shorter side to 256, centre crop 224 (crop_pct 224/256), with this interpolation.
PREPROCESSINGS: dict[str, dict[str, Any]] = {
    "Res256Crop224": dict(input_size=(3, 224, 224), crop_pct=0.875, interpolation="bilinear"),
    "BicubicRes256Crop224": dict(input_size=(3, 224, 224), crop_pct=0.875, interpolation="bicubic"),
}
DEFAULT_PREPROCESSING = "Res256Crop224"  # RobustBench's ImageNet loader's default


def image_config(data: BenchmarkData, preprocessing: Any) -> dict[str, Any]:
    """How a model given to benchmark() takes ``data``'s images, with RobustBench's ``preprocessing``."""
    if not data.preprocessed:
        if preprocessing is not None:
            raise UserError(f"{data.name} images are read as published: preprocessing applies to imagenet only")
        return dict(data.image_config)
    name = DEFAULT_PREPROCESSING if preprocessing is None else preprocessing
    if not isinstance(name, str) or name not in PREPROCESSINGS:
        shown = name if isinstance(name, str) else type(name).__name__
        raise UserError(
            f"preprocessing {shown!r} is not one robeval's image reader does; name one of {', '.join(PREPROCESSINGS)}"
        )
    return {**data.image_config, **PREPROCESSINGS[name]}


def threat_model_name(threat_model: Any) -> str:
    """RobustBench's threat model as text (its ``ThreatModel`` enum or a string), checked."""
    name = str(getattr(threat_model, "value", threat_model))
    if name not in THREAT_MODELS:
        raise UserError(f"unknown threat model {name!r}; RobustBench's are {', '.join(THREAT_MODELS)}")
    return name


def benchmark_data(dataset: Any) -> BenchmarkData:
    """RobustBench's data set (its ``BenchmarkDataset`` enum or a string)."""
    return lookup(BENCHMARK_DATA, str(getattr(dataset, "value", dataset)), "RobustBench data set")


def robustbench_dataset(source: str) -> str:
    """A run's ``--data`` as RobustBench names its data sets: a published set's or the digits' own name,
    and ``imagenet`` for an image folder (robeval reads ImageNet from one)."""
    return source if source in IN_MEMORY else "imagenet"


def examples_caveat(source: str, split: str, selection: str, n: int) -> str | None:
    """Why a run's ``n`` examples are not the ones RobustBench evaluates on its data set (None: they are,
    or RobustBench has no such data set): another split, a class-balanced or another listed subset.
    ``source``, ``split``: the run's --data and --split (empty: the data has no splits)."""
    name = robustbench_dataset(source)
    if name not in BENCHMARK_DATA:
        return None
    if split not in ("", "test"):
        return f"{n} examples of the {split} split, not RobustBench's test examples"
    wanted = BENCHMARK_DATA[name].examples
    if selection == wanted:
        return None
    subset = {"balanced": "a class-balanced subset of", LISTED: "a listed subset of"}.get(selection, f"the {selection}")
    theirs = "list of 5,000 images (a prefix of it)" if wanted == ROBUSTBENCH_5000 else f"first {n}"
    return f"{subset} {n} examples, not RobustBench's {theirs}"


@functools.cache
def robustbench_list() -> tuple[str, ...]:
    """RobustBench's ImageNet list as shipped with robeval (read once)."""
    return tuple(read_list(Path(str(resources.files(__package__).joinpath("data", ROBUSTBENCH_LIST)))))


def resolve_subset(subset: str | None, subset_file: str | None) -> list[str] | None:
    """The image list a run uses, or None for the class-balanced default."""
    if subset_file is not None:
        return read_list(subset_file)
    if subset is None:
        return None
    if subset != ROBUSTBENCH_5000:
        raise UserError(f"unknown --subset {subset!r}; known: {ROBUSTBENCH_5000} (or --subset-file FILE)")
    return list(robustbench_list())


def example_choice(config: Mapping[str, Any]) -> str:
    """How a stored run chose its examples, in one word: its ``--selection`` (balanced, first),
    ``robustbench-5000`` for RobustBench's ImageNet list or a prefix of it, ``listed`` for another list."""
    subset = config.get("subset")
    if not subset:
        return str(config.get("selection") or "balanced")
    names = robustbench_list()
    return ROBUSTBENCH_5000 if tuple(subset) == names[: len(subset)] else LISTED

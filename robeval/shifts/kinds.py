"""The kinds of distribution shift a run can ask for (``--shift``), each an object that says what the
run's data and conditions are under it: whether the data has clean images, the conditions it adds,
how a model is seen (ImageNet-A/-R: 200 of its 1000 classes), how its data is found and read, what
``run.json`` says of it.  The engine asks the kind; it never tests which kind it is.

A run's configuration is read by attribute (``shift``, ``data``, ``corruptions``, ``severities``,
``attacks``, ``seed``, ``n_examples``, ``subset``, ``class_map``): the evaluation's config, duck-typed.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..defaults import DIGITS
from ..errors import UserError
from ..registry import Registry
from .catalog import Condition, condition_name, parse_corruptions, parse_severities

if TYPE_CHECKING:  # the data and dataset modules load torch: imported where used, so --shift is checked without it
    from torch import nn
    from torch.utils.data import Dataset

    from ..data.examples import EvalData, ImageSpec


class ShiftKind:
    """A shift whose conditions are ImageNet-C's (corruption, severity) pairs (the base of the others)."""

    name = ""
    description = ""
    has_clean_images = True  # the data holds the clean images (attacks and a clean row are possible)
    needs_a_copy = False  # the data must be a copy of that data set, not the digits demo
    has_conditions = True  # it adds (corruption, severity) conditions (--corruptions, --severities)

    def conditions(self, corruptions: Any = None, severities: Any = None) -> list[Condition]:
        return [
            Condition(condition_name(c, s), c, s)
            for c in parse_corruptions(corruptions)
            for s in parse_severities(severities)
        ]

    def check(self, config: Any) -> None:
        """One line for a run this shift cannot do."""
        if not self.has_conditions and (config.corruptions or config.severities):
            raise UserError(f"--shift {self.name} has no corruptions or severities to choose")
        if self.needs_a_copy and config.data == DIGITS:
            raise UserError(
                f"--shift {self.name} reads a copy of that data set: pass --data PATH "
                "(the digits demo takes --shift corruptions)"
            )
        if not self.has_clean_images and config.attacks:
            raise UserError(
                f"--shift {self.name} holds no clean images to attack: run the attacks on the clean "
                "validation folder with --shift corruptions, or without --attacks here"
            )

    def wrap_target(self, target: nn.Module) -> nn.Module:
        return target

    def load(self, config: Any, spec: ImageSpec) -> EvalData:
        from ..data.loading import load_data

        return load_data(config, spec)

    def condition_dataset(self, data: EvalData, condition: Condition, config: Any) -> Dataset:
        raise NotImplementedError

    def loader_workers(self, configured: int) -> int:
        return configured

    def prepare(self, conditions: list[Condition]) -> None:
        """Work to do once in the main process before the DataLoader's workers fork."""

    def info(self, config: Any) -> dict[str, Any]:
        info: dict[str, Any] = {"kind": self.name, "description": self.description}
        if self.has_conditions:
            info.update(corruptions=config.corruptions, severities=config.severities)
        return info


class GeneratedCorruptions(ShiftKind):
    name = "corruptions"
    description = "ImageNet-C's corruptions generated from the clean images (imagecorruptions)"

    def condition_dataset(self, data: EvalData, condition: Condition, config: Any) -> Dataset:
        from .datasets import CorruptedImages

        return CorruptedImages(data.dataset, condition, config.seed)

    def loader_workers(self, configured: int) -> int:
        return max(1, configured)  # corrupting is CPU work done beside the model, in worker processes

    def prepare(self, conditions: list[Condition]) -> None:
        if any(c.corruption == "glass_blur" for c in conditions):  # compiled once here, inherited by the workers
            import torch

            from .corrupt import corrupt_tensor

            corrupt_tensor(torch.zeros(3, 32, 32), "glass_blur", 1, 0)

    def info(self, config: Any) -> dict[str, Any]:
        from importlib.metadata import version

        return {
            **super().info(config),
            "implementation": f"imagecorruptions-imaug {version('imagecorruptions-imaug')}; "
            "one seed per (corruption, severity, example)",
        }


class CorruptionTree(ShiftKind):
    name = "imagenet-c"
    description = "a pre-generated ImageNet-C tree <corruption>/<severity>/<wnid>/*.JPEG"
    has_clean_images = False
    needs_a_copy = True

    def load(self, config: Any, spec: ImageSpec) -> EvalData:
        """The first condition's folder names the examples (its file names are every condition's);
        the images are the 224 x 224 centre crops already: resized to the model's size, not cropped again."""
        from ..data.folders import load_folder_data
        from .datasets import check_tree

        root = Path(config.data)
        if not root.is_dir():
            raise UserError(f"ImageNet-C folder not found: {root}")
        wanted = self.conditions(config.corruptions, config.severities)
        check_tree(root, wanted)
        first = root / wanted[0].corruption / str(wanted[0].severity)
        cropped = replace(spec, crop_pct=1.0)  # type: ignore[type-var]
        data = load_folder_data(first, cropped, config.n_examples, config.subset, config.class_map)
        return replace(data, name=f"{root.resolve()} (ImageNet-C)", crop_pct=1.0)

    def condition_dataset(self, data: EvalData, condition: Condition, config: Any) -> Dataset:
        from .datasets import TreeImages

        return TreeImages(data.dataset, config.data, condition)


class ClassSubset(ShiftKind):
    """ImageNet-A / ImageNet-R: other images of 200 of ImageNet's classes, no added conditions."""

    needs_a_copy = True
    has_conditions = False

    def __init__(self, name: str, title: str) -> None:
        self.name, self.description = name, f"{title} (200 classes; logits restricted to them)"

    def conditions(self, corruptions: Any = None, severities: Any = None) -> list[Condition]:
        return []

    def wrap_target(self, target: nn.Module) -> nn.Module:
        from .datasets import RestrictedLogits

        return RestrictedLogits(target, self.name)

    def load(self, config: Any, spec: ImageSpec) -> EvalData:
        from .datasets import check_class_set

        data = super().load(config, spec)
        check_class_set(list(data.dataset.classes), self.name, config.data)
        return data

    def info(self, config: Any) -> dict[str, Any]:
        return {**super().info(config), "classes": f"{self.name}: 200 ImageNet-1k classes, the other logits masked"}


SHIFT_KINDS: Registry[ShiftKind] = Registry("shift")
for _kind in (
    GeneratedCorruptions(),
    CorruptionTree(),
    ClassSubset("imagenet-a", "ImageNet-A"),
    ClassSubset("imagenet-r", "ImageNet-R"),
):
    SHIFT_KINDS.add(_kind.name, _kind)


def get_shift(name: str) -> ShiftKind:
    return SHIFT_KINDS.get(name)


def run_conditions(config: Any) -> list[Condition]:
    """The conditions of a run (its configuration as an object or as the store's dict); none without a shift."""
    get = config.get if isinstance(config, dict) else lambda key: getattr(config, key, None)
    if not get("shift"):
        return []
    return get_shift(str(get("shift"))).conditions(get("corruptions"), get("severities"))

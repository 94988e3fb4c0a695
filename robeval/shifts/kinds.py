"""The kinds of distribution shift a run can ask for (``--shift``), each an object that says what the
run's data and conditions are under it: whether the data has clean images, the conditions it adds
(its benchmark's corruption set), how a model is seen (ImageNet-A/-R: 200 of its 1000 classes), how
its data is found and read, how tables report it, what ``run.json`` says of it.  The engine asks the
kind; it never tests which kind it is.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.defaults import DIGITS
from ..core.errors import UserError
from ..core.registry import Registry
from ..data.labels import imagenet_wnids
from ..data.published import IN_MEMORY
from ..options import EvalConfig
from .catalog import (
    IMAGENET_3DCC,
    IMAGENET_C,
    IMAGENET_C_BAR,
    Condition,
    CorruptionSet,
    class_set,
    condition_name,
    parse_severities,
)

if TYPE_CHECKING:  # the data and dataset modules load torch: imported where used, so --shift is checked without it
    from torch import nn
    from torch.utils.data import Dataset

    from ..data.examples import EvalData, ImageSpec


CLEAN_DATA_SHIFTS = ("", "corruptions")  # runs whose clean and attack rows are on the clean data


class ShiftKind:
    """A shift whose conditions are (corruption, severity) pairs of its corruption set (the base of the others)."""

    name = ""
    title = "ImageNet-C"  # how tables and messages name the benchmark
    description = ""
    corruption_set: CorruptionSet = IMAGENET_C  # what --corruptions chooses from
    reported_as = "mce"  # tables: "mce" (mCE, relative mCE, mean error), "accuracy" or "error" (the mean's)
    imagenet_images: bool | None = None  # None: ImageNet's if the data is an image folder (mCE's condition)
    has_clean_images = True  # the data holds the clean images (attacks and a clean row are possible)
    needs_a_copy = False  # the data must be a copy of that data set, not the digits demo
    has_conditions = True  # it adds (corruption, severity) conditions (--corruptions, --severities)
    in_memory = False  # its images are arrays (no JPEG decoding): DataLoader workers and small batches don't pay

    def conditions(self, corruptions: Any = None, severities: Any = None) -> list[Condition]:
        return [
            Condition(condition_name(c, s), c, s)
            for c in self.corruption_set.parse(corruptions)
            for s in parse_severities(severities)
        ]

    def check(self, config: EvalConfig) -> None:
        """One line for a run this shift cannot do."""
        if not self.has_conditions and (config.corruptions or config.severities):
            raise UserError(f"--shift {self.name} has no corruptions or severities to choose")
        if self.needs_a_copy and config.data == DIGITS:
            raise UserError(
                f"--shift {self.name} reads a copy of that data set: pass --data PATH "
                "(the digits demo takes --shift corruptions)"
            )
        if self.needs_a_copy and self.in_memory and (config.subset is not None or config.class_map is not None):
            raise UserError(
                f"--subset / --subset-file / --class-map apply to an image folder, not to --shift {self.name}"
            )
        if self.needs_a_copy and not self.in_memory and config.selection != "balanced":
            raise UserError(f"--selection first applies to in-memory data sets; --shift {self.name} takes --subset")
        if not self.has_clean_images and config.attacks:
            raise UserError(
                f"--shift {self.name} holds no clean images to attack: run the attacks on the clean "
                "data with --shift corruptions, or without --attacks here"
            )

    def on_imagenet(self, source: str) -> bool:
        """Whether a run's data (its --data) are ImageNet images: an image folder's are; the embedded
        digits and the published sets are not."""
        return self.imagenet_images if self.imagenet_images is not None else source not in IN_MEMORY

    def wrap_target(self, target: nn.Module) -> nn.Module:
        return target

    def load(self, config: EvalConfig, spec: ImageSpec) -> EvalData:
        from ..data.loading import load_data

        return load_data(config, spec)

    def condition_dataset(self, data: EvalData, condition: Condition, config: EvalConfig) -> Dataset:
        raise NotImplementedError

    def loader_workers(self, configured: int) -> int:
        return configured

    def prepare(self, conditions: list[Condition]) -> None:
        """Work to do once in the main process before the DataLoader's workers fork."""

    def info(self, config: EvalConfig) -> dict[str, Any]:
        info: dict[str, Any] = {"kind": self.name, "description": self.description}
        if self.has_conditions:
            info.update(corruptions=config.corruptions, severities=config.severities)
        return info


class GeneratedCorruptions(ShiftKind):
    name = "corruptions"
    description = "ImageNet-C's corruptions generated from the clean images (imagecorruptions)"

    def condition_dataset(self, data: EvalData, condition: Condition, config: EvalConfig) -> Dataset:
        from .condition_images import CorruptedImages

        return CorruptedImages(data.dataset, condition, config.seed)

    def loader_workers(self, configured: int) -> int:
        return max(1, configured)  # corrupting is CPU work done beside the model, in worker processes

    def prepare(self, conditions: list[Condition]) -> None:
        if any(c.corruption == "glass_blur" for c in conditions):  # compiled once here, inherited by the workers
            import torch

            from .condition_images import corrupt_tensor

            corrupt_tensor(torch.zeros(3, 32, 32), "glass_blur", 1, 0)

    def info(self, config: EvalConfig) -> dict[str, Any]:
        from importlib.metadata import version

        return {
            **super().info(config),
            "implementation": f"imagecorruptions-imaug {version('imagecorruptions-imaug')}; "
            "one seed per (corruption, severity, example)",
        }


def read_folder(config: EvalConfig, root: str | Path, spec: ImageSpec) -> EvalData:
    """A shift data set's folder copy, chosen from as image folders are (class-balanced, or --subset-file)."""
    from ..data.folders import load_folder_data

    return load_folder_data(root, spec, config.n_examples, config.subset, config.class_map)


def check_folders(classes: list[str], allowed: Collection[str], data: str, what: str, layout: str) -> None:
    """The class folders of a shift data set's copy, checked against its published layout before a run
    reads them: one line naming the first folder not among ``allowed``, and how many there are."""
    stray = [c for c in classes if c not in allowed]
    if stray:
        raise UserError(f"data {data}: folder {stray[0]!r} is not {what} ({len(stray)} such folders); {layout}")


class CorruptionTree(ShiftKind):
    """A pre-generated tree ``ROOT/<corruption>/<severity>/<wnid>/*.JPEG`` (ImageNet-C's layout)."""

    has_clean_images = False
    needs_a_copy = True
    imagenet_images = True

    def __init__(self, name: str, corruption_set: CorruptionSet, reported_as: str) -> None:
        self.name, self.corruption_set, self.reported_as = name, corruption_set, reported_as
        self.title = corruption_set.title
        self.description = f"a pre-generated {self.title} tree <corruption>/<severity>/<wnid>/*.JPEG"

    def load(self, config: EvalConfig, spec: ImageSpec) -> EvalData:
        """The first condition's folder names the examples (its file names are every condition's);
        the images are the 224 x 224 centre crops already: resized to the model's size, not cropped again."""
        from ..data.examples import cropped

        root = Path(config.data)
        if not root.is_dir():
            raise UserError(f"{self.title} folder not found: {root}")
        wanted = self.conditions(config.corruptions, config.severities)
        for c in wanted:  # every requested ROOT/<corruption>/<severity> exists
            folder = root / c.corruption / str(c.severity)
            if not folder.is_dir():
                expected = "expected ROOT/<corruption>/<severity>/<class>/..."
                raise UserError(f"{self.title} folder missing: {folder} ({expected})")
        first = root / wanted[0].corruption / str(wanted[0].severity)
        data = read_folder(config, first, cropped(spec, 1.0))
        return replace(data, name=f"{root.resolve()} ({self.title})", crop_pct=1.0)

    def condition_dataset(self, data: EvalData, condition: Condition, config: EvalConfig) -> Dataset:
        from .condition_images import TreeImages

        return TreeImages(data.dataset, config.data, condition)


class OtherImages(ShiftKind):
    """Other images of the model's classes, no added conditions: the clean row is the shift's number
    (attacks possible).  The base reads an image folder whose folders are ImageNet wnids."""

    needs_a_copy = True
    has_conditions = False

    def __init__(self, name: str, title: str, description: str) -> None:
        self.name, self.title, self.description = name, title, f"{title} ({description})"

    def conditions(self, corruptions: Any = None, severities: Any = None) -> list[Condition]:
        return []


class ClassSubset(OtherImages):
    """ImageNet-A / ImageNet-R: other images of 200 of ImageNet's classes."""

    def __init__(self, name: str, title: str) -> None:
        super().__init__(name, title, "200 classes; logits restricted to them")

    def wrap_target(self, target: nn.Module) -> nn.Module:
        from .condition_images import RestrictedLogits

        return RestrictedLogits(target, self.name)

    def load(self, config: EvalConfig, spec: ImageSpec) -> EvalData:
        data = super().load(config, spec)
        what, question = f"one of {self.name}'s 200 classes", f"is this an {self.name} copy?"
        check_folders(list(data.dataset.classes), set(class_set(self.name)), config.data, what, question)
        return data

    def info(self, config: EvalConfig) -> dict[str, Any]:
        return {**super().info(config), "classes": f"{self.name}: 200 ImageNet-1k classes, the other logits masked"}


class WnidFolders(OtherImages):
    """ImageNet-Sketch: ``ROOT/<wnid>/*`` over the 1000 classes; ROOT may be the folder holding the
    download's ``sketch/``."""

    unpacked_as = "sketch"

    def load(self, config: EvalConfig, spec: ImageSpec) -> EvalData:
        root = Path(config.data)
        root = root / self.unpacked_as if (root / self.unpacked_as).is_dir() else root
        data = read_folder(config, root, spec)
        classes = list(data.dataset.classes)
        layout = f"{self.title}'s layout is ROOT/<wnid>/<image>"
        check_folders(classes, set(imagenet_wnids() or classes), str(root), "an ImageNet-1k wnid", layout)
        return data


class ClassIndexFolders(OtherImages):
    """ImageNet-V2: ``ROOT/<class index>/*.jpeg``, the folder named by the ImageNet-1k class index as a
    plain integer.  Folders are listed as strings ("0", "1", "10", "100", ...): each is mapped by its
    integer value, not by its sorted position."""

    def load(self, config: EvalConfig, spec: ImageSpec) -> EvalData:
        from ..data.labels import LabelSpace

        if config.class_map is not None:
            raise UserError(f"--shift {self.name}: its folders are class indices already; drop --class-map")
        data = read_folder(config, config.data, spec)
        classes = list(data.dataset.classes)
        indices = {str(index) for index in range(1000)}  # written as plain integers: "7", not "07"
        layout = "ImageNet-V2's layout is ROOT/<class index>/<image>"
        check_folders(classes, indices, config.data, "a class index 0..999 written as a plain integer", layout)
        data.dataset.samples = [(path, int(classes[position])) for path, position in data.dataset.samples]
        space = LabelSpace({c: int(c) for c in classes}, 1000, f"{self.title} class-index folders (1000 classes)")
        return replace(data, label_space=space)


def array_folder(config: EvalConfig, what: str) -> Path:
    """The folder of a published ``.npy`` copy."""
    root = Path(config.data)
    if not root.is_dir():
        raise UserError(f"--shift {what}: data folder not found: {root}")
    return root


def in_memory_data(kind: ShiftKind, config: EvalConfig, root: Path, images, labels, num_classes: int) -> EvalData:
    """The chosen examples of a published ``.npy`` copy (``--selection`` applies), with CIFAR's classes."""
    from ..data.arrays import array_data, cifar_label_space

    name = f"{root.resolve()} ({kind.title})"
    return array_data(name, images, labels, config.n_examples, config.selection, cifar_label_space(num_classes))


class ArrayCorruptions(ShiftKind):
    """CIFAR-10-C / CIFAR-100-C: ``ROOT/<corruption>.npy`` (severities 1-5 one after another) and
    ``ROOT/labels.npy`` (see :mod:`.arrays`); ImageNet-C's corruption set, 32 x 32 images."""

    has_clean_images = False
    needs_a_copy = True
    imagenet_images = False
    in_memory = True
    reported_as = "accuracy"  # RobustBench: mean accuracy over the 15 corruptions x 5 severities

    def __init__(self, name: str, title: str, clean: str, num_classes: int) -> None:
        self.name, self.title, self.num_classes = name, title, num_classes
        self.description = f"{title}'s <corruption>.npy (severities 1-5 of the {clean} test set one after another)"

    def load(self, config: EvalConfig, spec: ImageSpec) -> EvalData:
        """Every requested corruption's file is checked (shape, rows) before any work; the first
        condition's images name the examples (indices into the test set)."""
        from .arrays import labels_per_severity, severity_rows

        root = array_folder(config, self.name)
        labels = labels_per_severity(root)
        wanted = self.conditions(config.corruptions, config.severities)
        for corruption in dict.fromkeys(c.corruption for c in wanted):
            severity_rows(root / f"{corruption}.npy", 1, labels)
        first = severity_rows(root / f"{wanted[0].corruption}.npy", wanted[0].severity, labels)
        return in_memory_data(self, config, root, first, labels, self.num_classes)

    def condition_dataset(self, data: EvalData, condition: Condition, config: EvalConfig) -> Dataset:
        from .arrays import SeverityImages

        return SeverityImages(config.data, condition, data.dataset.labels)


class CleanArrays(OtherImages):
    """CIFAR-10.1 (v6): 2,000 new test images of CIFAR-10's classes, attacked as the clean set is."""

    imagenet_images = False
    in_memory = True

    def load(self, config: EvalConfig, spec: ImageSpec) -> EvalData:
        from .arrays import cifar10_1_arrays

        root = array_folder(config, self.name)
        return in_memory_data(self, config, root, *cifar10_1_arrays(root), 10)


SHIFT_KINDS: Registry[ShiftKind] = Registry("shift")
for _kind in (
    GeneratedCorruptions(),
    CorruptionTree("imagenet-c", IMAGENET_C, "mce"),
    CorruptionTree("imagenet-3dcc", IMAGENET_3DCC, "accuracy"),  # RobustBench reports its mean accuracy
    CorruptionTree("imagenet-c-bar", IMAGENET_C_BAR, "error"),  # Mintun et al. report its mean error
    ClassSubset("imagenet-r", "ImageNet-R"),  # R before A: the Elliptical paper's column order
    ClassSubset("imagenet-a", "ImageNet-A"),
    ClassIndexFolders("imagenet-v2", "ImageNet-V2", "folders are class indices 0..999; 1000 classes"),
    WnidFolders("imagenet-sketch", "ImageNet-Sketch", "sketch/<wnid>/ folders; 1000 classes"),
    ArrayCorruptions("cifar10-c", "CIFAR-10-C", "CIFAR-10", 10),
    ArrayCorruptions("cifar100-c", "CIFAR-100-C", "CIFAR-100", 100),
    CleanArrays("cifar10.1", "CIFAR-10.1", "v6: 2,000 new test images of CIFAR-10's 10 classes"),
):
    SHIFT_KINDS.add(_kind.name, _kind)


def run_conditions(config: Mapping[str, Any]) -> list[Condition]:
    """The conditions of a stored run (its configuration as the store keeps it); none without a shift."""
    if not config.get("shift"):
        return []
    return SHIFT_KINDS.require(str(config["shift"])).conditions(config.get("corruptions"), config.get("severities"))

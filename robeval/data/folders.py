"""An ImageNet-style folder ``PATH/<class>/*.JPEG`` streamed from disk, read with each model's eval
transform (resize, centre crop; normalization lives inside the model)."""

from __future__ import annotations

import copy
from pathlib import Path

import torch

from ..core.errors import UserError
from .examples import EvalData, ImageSpec
from .labels import folder_label_space
from .subsets import balanced_subset, select_listed

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def eval_transform(spec: ImageSpec):
    """A model's eval transform without normalization (it lives inside the model)."""
    from torchvision import transforms
    from torchvision.transforms import InterpolationMode

    size = spec.input_size[-1]
    resize = int(round(size / spec.crop_pct))
    mode = {
        "bicubic": InterpolationMode.BICUBIC,
        "bilinear": InterpolationMode.BILINEAR,
        "nearest": InterpolationMode.NEAREST,
    }.get(spec.interpolation, InterpolationMode.BICUBIC)
    steps = [transforms.Resize(resize, interpolation=mode), transforms.CenterCrop(size)]
    if spec.input_size[0] == 1:
        steps.append(transforms.Grayscale(1))
    steps.append(transforms.ToTensor())
    return transforms.Compose(steps)


UNREADABLE = -1  # label returned for an image file that cannot be decoded


def load_image(path: str):
    """An image file as a PIL image (torchvision's loader: RGB, or what PIL/accimage reads)."""
    from torchvision.datasets.folder import default_loader

    return default_loader(path)


class TolerantImageFolder:
    """The images of ``root/<class>/`` (torchvision's folder layout), whose unreadable files come back
    as label -1 instead of raising.

    Half-copied ImageNet folders hold truncated JPEGs and stray non-images; the engine drops those
    examples, counts them and names them (``--strict-data`` turns them into an error).
    """

    def __init__(self, root: str, spec: ImageSpec) -> None:
        from torchvision.datasets.folder import find_classes, make_dataset

        self.root, self.spec = root, spec
        self.classes, class_to_idx = find_classes(root)
        self.samples: list[tuple[str, int]] = make_dataset(
            root, class_to_idx, is_valid_file=lambda p: p.lower().endswith(IMAGE_EXTENSIONS)
        )
        self.transform = eval_transform(spec)

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int):
        path, label = self.samples[i]
        try:
            return self.transform(load_image(path)), label
        except Exception:  # PIL raises OSError, SyntaxError, ValueError, ... on broken files
            return torch.zeros(tuple(self.spec.input_size)), UNREADABLE

    @property
    def targets(self) -> list[int]:
        return [label for _, label in self.samples]

    def for_spec(self, spec: ImageSpec) -> TolerantImageFolder:
        """A shallow copy reading the same files as ``spec`` takes them (another model's size)."""
        other = copy.copy(self)
        other.spec, other.transform = spec, eval_transform(spec)
        return other

    def path_of(self, i: int) -> str:
        return self.samples[i][0]

    def decodes(self, i: int) -> bool:
        """Whether image ``i`` decodes (a whole decode: a truncated JPEG fails only there)."""
        try:
            load_image(self.samples[i][0])
            return True
        except Exception:  # PIL raises OSError, SyntaxError, ValueError, ... on broken files
            return False


def open_folder(root: Path, spec: ImageSpec) -> TolerantImageFolder:
    """The folder's images, or one line for a folder that is missing, not one, or holds no images."""
    if not root.exists():
        raise UserError(f"data folder not found: {root}")
    if not root.is_dir():
        raise UserError(f"data path is not a folder: {root}")
    if not any(d.is_dir() and not d.name.startswith(".") for d in root.iterdir()):
        raise UserError(f"data folder {root} has no class sub-folders (expected {root}/<class>/<image>)")
    try:
        return TolerantImageFolder(str(root), spec)
    except (FileNotFoundError, RuntimeError) as exc:
        raise UserError(f"data folder {root} has no images ({str(exc).splitlines()[0][:120]})") from None


def readable_subset(dataset: TolerantImageFolder, n_examples: int | None, root: Path) -> tuple[list[int], list[str]]:
    """A class-balanced subset of images that decode (broken files passed over and named)."""
    passed_over: list[str] = []

    def usable(i: int) -> bool:
        if dataset.decodes(i):
            return True
        passed_over.append(dataset.path_of(i))
        return False

    indices = balanced_subset(dataset.targets, n_examples, usable if n_examples is not None else None)
    if n_examples is not None and len(indices) < n_examples:
        raise UserError(
            f"--n-examples {n_examples}: only {len(indices)} images of {root} can be read "
            f"({len(passed_over)} unreadable)"
        )
    return indices, passed_over


def load_folder_data(
    path: str | Path,
    spec: ImageSpec,
    n_examples: int | None,
    subset: list[str] | None = None,
    class_map: str | None = None,
) -> EvalData:
    """An ImageNet-style folder ``PATH/<class>/*.JPEG``; see :mod:`.labels` for how folders become classes."""
    root = Path(path)
    dataset = open_folder(root, spec)
    space = folder_label_space(dataset.classes, class_map)
    dataset.samples = [(p, space.mapping[dataset.classes[t]]) for p, t in dataset.samples]
    if subset is not None:
        indices, passed_over = select_listed(dataset.samples, root, subset, n_examples), list[str]()
    else:
        indices, passed_over = readable_subset(dataset, n_examples, root)
    return EvalData(str(root.resolve()), dataset, indices, space, passed_over)

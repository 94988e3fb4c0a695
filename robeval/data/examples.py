"""A fixed list of examples of one data set, served in batches of ``(example indices, [0,1] images,
labels)``.  A batch's composition depends only on its index, so a run can be resumed or split across
workers batch by batch.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any, Protocol

import torch
from torch.utils.data import DataLoader

from .labels import LabelSpace


class ImageSpec(Protocol):
    """How a model takes its images (a model's meta has these): size, resizing crop and interpolation
    (read-only: a meta's fixed ``(C, H, W)`` is one)."""

    @property
    def input_size(self) -> tuple[int, ...]: ...

    @property
    def crop_pct(self) -> float: ...

    @property
    def interpolation(self) -> str: ...


def cropped(spec: ImageSpec, crop_pct: float) -> ImageSpec:
    """``spec`` with another crop (a model's meta keeps its own in its config, so it is not replaced there)."""
    return SimpleNamespace(input_size=spec.input_size, interpolation=spec.interpolation, crop_pct=crop_pct)


@dataclass
class EvalData:
    """A fixed list of examples of one data set, served in batches."""

    name: str  # "digits" or the folder path
    dataset: Any  # a torch Dataset with len(); image folders also have ``for_spec`` and ``classes``
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

    def for_model(self, spec: ImageSpec) -> EvalData:
        """The same examples, read as ``spec`` (a model's input size and eval transform) takes them:
        image folders resize to each model, arrays (digits) are what they are."""
        reader = getattr(self.dataset, "for_spec", None)
        if reader is None:
            return self
        if self.crop_pct is not None:
            spec = cropped(spec, self.crop_pct)
        return replace(self, dataset=reader(spec))

    def info(self) -> dict[str, Any]:
        """What run.json says of the data."""
        return {
            "data": self.name,
            "identity": self.identity,
            "n": len(self.indices),
            "num_classes": self.num_classes,
            "labels": self.label_space.description,
            "passed_over": list(self.passed_over),
        }

    def num_batches(self, batch_size: int) -> int:
        return (len(self.indices) + batch_size - 1) // batch_size

    def batch_indices(self, batch_size: int, b: int) -> list[int]:
        """Example indices of batch ``b``: depends only on ``b`` and the batch size."""
        return self.indices[b * batch_size : (b + 1) * batch_size]

    def batches(
        self, batch_size: int, workers: int = 0, pin_memory: bool = False, only: Iterable[int] | None = None
    ) -> Iterator[tuple[int, torch.Tensor, torch.Tensor, torch.Tensor]]:
        """Yield ``(batch number, example indices, images, labels)``; ``only`` limits the batch numbers.

        Skipped batches are never read from disk.
        """
        wanted = sorted(set(range(self.num_batches(batch_size)) if only is None else only))
        plan = [self.batch_indices(batch_size, b) for b in wanted]
        if not plan:
            return
        loader = DataLoader(self.dataset, batch_sampler=plan, num_workers=workers, pin_memory=pin_memory)
        for b, idx, (x, y) in zip(wanted, plan, loader):
            yield b, torch.tensor(idx, dtype=torch.long), x, y

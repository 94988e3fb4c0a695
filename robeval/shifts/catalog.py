"""Facts of the distribution-shift benchmarks: each benchmark's corruption set (names, groups,
families, and AlexNet's published errors where there are some: the mCE normaliser), the severities,
and the 200-class sets of ImageNet-A and ImageNet-R.

Sources: Hendrycks & Dietterich, "Benchmarking Neural Network Robustness to Common Corruptions and
Perturbations", ICLR 2019 (ImageNet-C's corruptions, severities 1-5, AlexNet errors averaged over
severities, AlexNet's clean error 43.5%; CIFAR-10-C / CIFAR-100-C use the same corruptions); Kar et
al., "3D Common Corruptions and Data Augmentation", CVPR 2022 (ImageNet-3DCC); Mintun et al., "On
Interaction Between Augmentations and Corruptions in Natural Corruption Robustness", NeurIPS 2021
(ImageNet-C-bar); Hendrycks et al., "Natural Adversarial Examples" (ImageNet-A) and "The Many Faces
of Robustness" (ImageNet-R), 2021 (their 200 wnids, in ``data/``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from importlib import resources

from ..core.errors import UserError, closest
from ..core.numbers import whole_number

SEVERITIES = (1, 2, 3, 4, 5)  # every benchmark here has five


@dataclass(frozen=True)
class CorruptionSet:
    """The corruptions of one benchmark: what ``--corruptions`` chooses from under a shift kind.

    ``families`` partitions the corruptions in the benchmark's order (a family is also a group);
    ``groups`` are the other names ``--corruptions`` takes; ``default`` is the group of the
    benchmark's headline number (what no ``--corruptions`` means)."""

    name: str
    title: str
    families: dict[str, tuple[str, ...]]
    groups: dict[str, tuple[str, ...]]
    default: str
    alexnet_errors: dict[str, float] = field(default_factory=dict)  # per corruption, mean over severities
    alexnet_clean_error: float | None = None
    no_mce: str = ""  # why there is no AlexNet-normalised mCE (no published constants)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c for members in self.families.values() for c in members)

    @property
    def benchmark(self) -> tuple[str, ...]:
        """The corruptions of the benchmark's mean (mCE needs each at every severity)."""
        return self.groups[self.default]

    def choices(self) -> str:
        groups = [f"{g} (default)" if g == self.default else g for g in {**self.groups, **self.families}]
        return f"{', '.join(self.names)}, or a group: {', '.join(groups)}"

    def parse(self, text: str | list[str] | None) -> list[str]:
        """``--corruptions`` among this set's: ``None`` -> the default group; a group or family name; a
        corruption; or a comma list (ImageNet-C's: ``common``, the default, the 15; ``all``, 19; ``extra``)."""
        parts = [text] if isinstance(text, str) else (text or [self.default])
        items = [t.strip() for part in parts for t in str(part).split(",")]
        named = {**self.groups, **self.families}
        out: list[str] = []
        for item in filter(None, items):
            group = named.get(item, (item,) if item in self.names else None)
            if group is None:
                raise UserError(f"unknown corruption {item!r}{self._hint(item)}; {self.title}'s: {self.choices()}")
            out.extend(c for c in group if c not in out)
        if not out:
            raise UserError("--corruptions names no corruption")
        return out

    def _hint(self, item: str) -> str:
        near = closest(item, [*self.names, *self.groups, *self.families])
        other = next((s for s in CORRUPTION_SETS.values() if item in s.names), None)
        return near + (f" ({item} is an {other.title} corruption: --shift {other.name})" if other else "")


# ImageNet-C: the 15 benchmark corruptions by family, in the benchmark's order, then the 4 held-out extras.
_C_FAMILIES = {
    "noise": ("gaussian_noise", "shot_noise", "impulse_noise"),
    "blur": ("defocus_blur", "glass_blur", "motion_blur", "zoom_blur"),
    "weather": ("snow", "frost", "fog", "brightness"),
    "digital": ("contrast", "elastic_transform", "pixelate", "jpeg_compression"),
    "extra": ("speckle_noise", "gaussian_blur", "spatter", "saturate"),
}
COMMON = tuple(c for family in ("noise", "blur", "weather", "digital") for c in _C_FAMILIES[family])
EXTRA = _C_FAMILIES["extra"]

# AlexNet's top-1 error on each corruption, averaged over the five severities (the benchmark's constants).
ALEXNET_ERRORS = dict(zip(COMMON, (
    0.886428, 0.894468, 0.922640,  # noise
    0.819880, 0.826268, 0.785948, 0.798360,  # blur
    0.866816, 0.826572, 0.819324, 0.564592,  # weather
    0.853204, 0.646056, 0.717840, 0.606500,  # digital
)))  # fmt: skip
ALEXNET_CLEAN_ERROR = 0.435  # AlexNet's clean top-1 error in the benchmark's table (relative mCE)

IMAGENET_C = CorruptionSet(
    "imagenet-c",
    "ImageNet-C",
    _C_FAMILIES,
    {"common": COMMON, "all": COMMON + EXTRA},
    "common",
    ALEXNET_ERRORS,
    ALEXNET_CLEAN_ERROR,
)
_3DCC = (
    *("near_focus", "far_focus", "fog_3d", "flash", "color_quant", "low_light"),
    *("xy_motion_blur", "z_motion_blur", "iso_noise", "bit_error", "h265_abr", "h265_crf"),
)
IMAGENET_3DCC = CorruptionSet(
    "imagenet-3dcc",
    "ImageNet-3DCC",
    {"3dcc": _3DCC},
    {"all": _3DCC},
    "all",
    no_mce="ImageNet-3DCC has no published AlexNet errors (RobustBench normalises by its own AlexNet run): "
    "its mean is unnormalised",
)
_C_BAR = (
    *("blue_noise_sample", "brownish_noise", "caustic_refraction", "checkerboard_cutout", "cocentric_sine_waves"),
    *("inverse_sparkles", "perlin_noise", "plasma_noise", "single_frequency_greyscale", "sparkles"),
)
IMAGENET_C_BAR = CorruptionSet(
    "imagenet-c-bar",
    "ImageNet-C-bar",
    {"c-bar": _C_BAR},
    {"all": _C_BAR},
    "all",
    no_mce="robeval has no published AlexNet errors for ImageNet-C-bar: its mean error is unnormalised",
)
CORRUPTION_SETS = {s.name: s for s in (IMAGENET_C, IMAGENET_3DCC, IMAGENET_C_BAR)}  # every benchmark's set

# Every set's families (plots' panels); a corruption belongs to one set only, so its name says which.
FAMILIES = {f: members for s in CORRUPTION_SETS.values() for f, members in s.families.items()}
FAMILY_OF = {c: family for family, members in FAMILIES.items() for c in members}
assert len(FAMILY_OF) == sum(len(s.names) for s in CORRUPTION_SETS.values()), "a corruption in two sets"


@functools.cache
def class_set(name: str) -> tuple[str, ...]:
    """The sorted 200 wnids of ``imagenet-a`` or ``imagenet-r`` (shipped in ``data/``)."""
    text = resources.files(__package__).joinpath("data", f"{name}-wnids.txt").read_text()
    return tuple(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


def parse_severities(text: str | list[int] | None) -> list[int]:
    items = [t.strip() for t in str(text).split(",")] if isinstance(text, str) else list(text or SEVERITIES)
    out: list[int] = []
    for item in items:
        value = whole_number(str(item))
        if value is None:
            raise UserError(f"severity {item!r} is not a whole number from 1 to 5")
        if value not in SEVERITIES:
            raise UserError(f"severity {value} is outside 1-5 (the benchmarks' severities)")
        if value not in out:
            out.append(value)
    return sorted(out)


@dataclass(frozen=True)
class Condition:
    """One shifted condition of a run: a corruption at a severity."""

    name: str  # as records and tables name it: gaussian_noise@3
    corruption: str
    severity: int


def condition_name(corruption: str, severity: int) -> str:
    """How a shifted condition is named in records and tables: ``gaussian_noise@3``."""
    return f"{corruption}@{severity}"

"""Facts of the distribution-shift benchmarks: ImageNet-C's corruptions and families, AlexNet's
published errors (the mCE normaliser), and the 200-class sets of ImageNet-A and ImageNet-R.

Sources: Hendrycks & Dietterich, "Benchmarking Neural Network Robustness to Common Corruptions and
Perturbations", ICLR 2019 (corruptions, severities 1-5, AlexNet errors averaged over severities,
AlexNet's clean error 43.5%); Hendrycks et al., "Natural Adversarial Examples" (ImageNet-A) and
"The Many Faces of Robustness" (ImageNet-R), 2021 (their 200 wnids, in ``data/``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

from ..errors import UserError, closest

# The 15 benchmark corruptions by family, in the benchmark's order, then the 4 held-out extras.
FAMILIES = {
    "noise": ("gaussian_noise", "shot_noise", "impulse_noise"),
    "blur": ("defocus_blur", "glass_blur", "motion_blur", "zoom_blur"),
    "weather": ("snow", "frost", "fog", "brightness"),
    "digital": ("contrast", "elastic_transform", "pixelate", "jpeg_compression"),
    "extra": ("speckle_noise", "gaussian_blur", "spatter", "saturate"),
}
COMMON = tuple(c for family in ("noise", "blur", "weather", "digital") for c in FAMILIES[family])
EXTRA = FAMILIES["extra"]
FAMILY_OF = {c: family for family, members in FAMILIES.items() for c in members}
SEVERITIES = (1, 2, 3, 4, 5)

# AlexNet's top-1 error on each corruption, averaged over the five severities (the benchmark's constants).
ALEXNET_ERRORS = dict(
    zip(
        COMMON,
        (
            0.886428,
            0.894468,
            0.922640,
            0.819880,
            0.826268,
            0.785948,
            0.798360,
            0.866816,
            0.826572,
            0.819324,
            0.564592,
            0.853204,
            0.646056,
            0.717840,
            0.606500,
        ),
    )
)
ALEXNET_CLEAN_ERROR = 0.435  # AlexNet's clean top-1 error in the benchmark's table (relative mCE)


@functools.cache
def class_set(name: str) -> tuple[str, ...]:
    """The sorted 200 wnids of ``imagenet-a`` or ``imagenet-r`` (shipped in ``data/``)."""
    text = resources.files(__package__).joinpath("data", f"{name}-wnids.txt").read_text()
    return tuple(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


def parse_corruptions(text: str | list[str] | None) -> list[str]:
    """``None``/``common`` -> the 15; ``all`` -> 19; ``extra``; a family name; or a comma list."""
    items = [
        t.strip() for part in ([text] if isinstance(text, str) else (text or ["common"])) for t in str(part).split(",")
    ]
    out: list[str] = []
    for item in filter(None, items):
        group = {"common": COMMON, "all": COMMON + EXTRA, **FAMILIES}.get(item)
        if group is None:
            if item not in FAMILY_OF:
                names = [*FAMILY_OF, "common", "all", *FAMILIES]
                raise UserError(
                    f"unknown corruption {item!r}{closest(item, names)}; valid: {', '.join(COMMON + EXTRA)}, "
                    f"or a group: common (the 15), all, {', '.join(FAMILIES)}"
                )
            group = (item,)
        out.extend(c for c in group if c not in out)
    if not out:
        raise UserError("--corruptions names no corruption")
    return out


def parse_severities(text: str | list[int] | None) -> list[int]:
    items = [t.strip() for t in str(text).split(",")] if isinstance(text, str) else list(text or SEVERITIES)
    out: list[int] = []
    for item in items:
        try:
            value = int(item)
        except ValueError:
            raise UserError(f"severity {item!r} is not a whole number from 1 to 5") from None
        if value not in SEVERITIES:
            raise UserError(f"severity {value} is outside 1-5 (ImageNet-C's severities)")
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


def parse_condition(name: str) -> tuple[str, int] | None:
    """``(corruption, severity)`` of a condition name, or None for anything else (an attack)."""
    corruption, sep, severity = name.partition("@")
    if sep and corruption in FAMILY_OF and severity.isdigit():
        return corruption, int(severity)
    return None

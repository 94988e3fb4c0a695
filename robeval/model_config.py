"""What robeval needs to know about a model besides its network: the fields of timm's ``pretrained_cfg``
(input size, classes, mean/std, interpolation, crop), as data.

A registration states them (so ``robeval models`` and the preflight checks read them without building a
network); a model from the user's own code states them in a ``pretrained_cfg`` on the module, in a
:class:`ModelConfig` returned alongside it, or with ``--model-config`` (the later ones win, field by
field).  Torch-free: the command line parses ``--model-config`` before torch loads.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from .core.errors import UserError
from .core.numbers import decimal_number

IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
DEFAULT_INTERPOLATION, DEFAULT_CROP_PCT = "bicubic", 0.875  # timm's defaults: how image folders are resized
# ImageNet's usual evaluation transform (timm's defaults): what a network's config falls back to.
IMAGENET_CONFIG: dict[str, Any] = dict(
    input_size=(3, 224, 224),
    mean=IMAGENET_MEAN,
    std=IMAGENET_STD,
    interpolation=DEFAULT_INTERPOLATION,
    crop_pct=DEFAULT_CROP_PCT,
    num_classes=1000,
)
REQUIRED = ("input_size",)  # what a user's model must state; classes are read off its output when not stated


@dataclass(frozen=True)
class ModelConfig:
    """A model's image facts, as timm's ``pretrained_cfg`` names them; ``None`` = not stated.

    ``mean``/``std``: the normalization the network expects (robeval applies it inside the model it
    evaluates, so attacks see [0,1] pixels); a module that takes [0,1] pixels states none."""

    input_size: tuple[int, int, int] | None = None
    num_classes: int | None = None
    mean: tuple[float, ...] | None = None
    std: tuple[float, ...] | None = None
    interpolation: str | None = None
    crop_pct: float | None = None

    @classmethod
    def from_cfg(cls, cfg: Mapping[str, Any] | ModelConfig | None) -> ModelConfig:
        """The fields of a timm-style ``pretrained_cfg`` dict (other keys ignored), or of a config, each checked
        (a ``ModelConfig`` built in Python has had no field checked)."""
        if cfg is None:
            return cls()
        if isinstance(cfg, ModelConfig):
            cfg = cfg.as_cfg()
        if not isinstance(cfg, Mapping):
            raise UserError(f"a model's config is a dict or robeval.ModelConfig, not a {type(cfg).__name__}")
        return cls(**{f.name: parse_field(f.name, cfg[f.name]) for f in fields(cls) if cfg.get(f.name) is not None})

    def updated(self, other: ModelConfig) -> ModelConfig:
        """This config with every field ``other`` states."""
        return replace(self, **{k: v for k, v in asdict(other).items() if v is not None})

    def missing(self) -> list[str]:
        return [name for name in REQUIRED if getattr(self, name) is None]

    def completed(self, num_classes: int) -> ModelConfig:
        """Every field filled: classes as the output says, no normalization, timm's resizing defaults."""
        assert self.input_size is not None, "check missing() first"
        channels = self.input_size[0]
        return ModelConfig(
            input_size=self.input_size,
            num_classes=self.num_classes if self.num_classes is not None else num_classes,
            mean=self.mean if self.mean is not None else (0.0,) * channels,
            std=self.std if self.std is not None else (1.0,) * channels,
            interpolation=self.interpolation or DEFAULT_INTERPOLATION,
            crop_pct=self.crop_pct if self.crop_pct is not None else DEFAULT_CROP_PCT,
        )

    def as_cfg(self) -> dict[str, Any]:
        """The stated fields as a ``pretrained_cfg`` dict."""
        return {k: v for k, v in asdict(self).items() if v is not None}


FIELD_NAMES = tuple(f.name for f in fields(ModelConfig))


def _numbers(value: Any, cast: Callable[[Any], Any]) -> tuple:
    """Numbers from ``"1,8,8"``, ``"1x8x8"``, ``"1, 8, 8"`` or ``"1 8 8"`` (an empty part, ``"1,,8"``, is
    none), or from a sequence."""
    parts = re.split(r"\s*[,x]\s*|\s+", value.strip()) if isinstance(value, str) else list(value)
    return tuple(cast(p) for p in parts)


def _number(value: Any) -> float:
    """A finite number: text in robeval.numbers' grammar (``"0.5"``, not ``"٠.٥"``), or a number from Python."""
    number = decimal_number(value) if isinstance(value, str) else float(value)
    if number is None or not math.isfinite(number):
        raise ValueError(value)
    return number


def _whole(value: Any) -> int:
    number = _number(value)
    if not number.is_integer():
        raise ValueError(value)
    return int(number)


# field -> (how its value is read, the test it must pass, the words for the error)
FIELD_RULES: dict[str, tuple[Any, Any, str]] = {
    "input_size": (
        lambda v: _numbers(v, _whole),
        lambda v: len(v) == 3 and min(v) > 0,
        "three positive whole numbers C,H,W",
    ),
    "num_classes": (_whole, lambda v: v >= 1, "a positive whole number"),
    "mean": (lambda v: _numbers(v, _number), lambda v: len(v) > 0, "one number per channel"),
    "std": (lambda v: _numbers(v, _number), lambda v: len(v) > 0 and min(v) > 0, "one positive number per channel"),
    "interpolation": (str, lambda v: bool(v), "a resize mode (bicubic, bilinear, nearest)"),
    "crop_pct": (_number, lambda v: 0 < v <= 1, "a fraction in (0, 1]"),
}


def parse_field(name: str, value: Any) -> Any:
    """One field's value from a config, a string (``1,8,8`` / ``1x8x8``) or a number; one line when wrong."""
    read, valid, words = FIELD_RULES[name]
    try:
        parsed = read(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: a Python int beyond any float
        parsed = None
    if parsed is None or not valid(parsed):
        raise UserError(f"model config {name}={value!r}: {name} is {words}")
    return parsed


def parse_model_config(items: list[str], models: list[str]) -> dict[str, dict[str, Any]]:
    """``--model-config [MODEL.]KEY=VALUE`` items (repeatable) -> {model: {key: value}}; MODEL may be left
    out when the run has one model."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        left, eq, value = item.partition("=")
        model, dot, key = left.rpartition(".")
        if not eq or key not in FIELD_NAMES:
            raise UserError(
                f"--model-config {item!r}: write [MODEL.]KEY=VALUE with KEY one of {', '.join(FIELD_NAMES)}"
            )
        if not dot:
            if len(models) != 1:
                raise UserError(f"--model-config {item!r}: with several models write MODEL.{key}=VALUE")
            model = models[0]
        out.setdefault(model, {})[key] = parse_field(key, value)
    return out


def how_to_state(name: str, fields_missing: list[str], from_python: bool = False) -> str:
    """The one line saying what a user's model does not state, and the ways to state it (a module given
    from Python: in the list itself)."""
    what = " and ".join(fields_missing)
    example = ", ".join(f"{f}=..." for f in fields_missing)
    cfg = f"set pretrained_cfg = {{{', '.join(repr(f) + ': ...' for f in fields_missing)}}} on the module"
    if from_python:
        return f"model {name} does not say its {what}: {cfg}, or give (module, robeval.ModelConfig({example}))"
    return (
        f"model {name} does not say its {what}: {cfg}, return (module, robeval.ModelConfig({example})), "
        f"or pass --model-config {name}.{fields_missing[0]}=..."
    )

"""The rules of attack settings: a setting's type (from the attack's default) and the values that mean
something (``pgd.steps=0`` is no attack; ``spsa.samples`` counts +/- direction pairs, at least one).

:func:`apply_settings` is the one judge: ``make_config`` calls it for every attack of a run (the
command line's ``--set`` included, before torch loads), and an attack built directly from Python
(``PGD(model, eps, steps=...)``) calls it too, so what a run stores is what ran.  A setting name means
the same in every attack that has it.  Also here: how settings stored by an earlier robeval read today.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .core.errors import UserError, closest
from .core.numbers import INT64_MAX, decimal_number, whole_number


@dataclass(frozen=True)
class Limit:
    """The values a numeric setting may take: bounds (closed unless ``*_open``)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    why: str = ""  # what the setting counts, for the error message

    def allows(self, value: float) -> bool:
        if isinstance(value, float) and not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def describe(self) -> str:
        parts = []
        if self.low is not None:
            parts.append(f"{'above' if self.low_open else 'at least'} {self.low:g}")
        if self.high is not None:
            parts.append(f"{'below' if self.high_open else 'at most'} {self.high:g}")
        text = " and ".join(parts)
        return text + (f" ({self.why})" if self.why else "")


POSITIVE = Limit(low=0, low_open=True)
FRACTION = Limit(low=0, high=1, low_open=True)  # (0, 1]

SETTING_LIMITS: dict[str, Limit] = {
    "steps": Limit(low=1, why="iterations; 0 would return the clean or the random start"),
    "iterations": Limit(low=1, why="iterations"),
    "n_iter": Limit(low=1, why="iterations"),
    "eot_iter": Limit(low=1, why="gradient samples per step; 1 = no EOT"),
    "n_restarts": Limit(low=1, why="runs per example"),
    "rel_stepsize": POSITIVE,
    "samples": Limit(low=1, why="+/- direction pairs per step: 2 x samples model evaluations"),
    "lr": POSITIVE,
    "delta": POSITIVE,
    "max_batch": Limit(low=2, why="images per forward pass: at least one +/- pair"),
    "rho": Limit(low=0, high=1, low_open=True, high_open=True),
    "n_target_classes": Limit(low=1, why="target classes, at most the model's classes minus one"),
    "skip_malt_targets": Limit(low=0, why="the MALT-ranked targets apgd-t-malt ran, skipped here"),
    "alpha_max": FRACTION,
    "eta": Limit(low=1, why="overshoot factor"),
    "beta": FRACTION,
    "n_queries": Limit(low=1, why="queries per example"),
    "p_init": FRACTION,
    "max_stepsize": POSITIVE,
    "gamma": Limit(low=0, high=1, low_open=True, high_open=True),
    "restart_radius": POSITIVE,
}

KIND_WORDS = {bool: "true or false", int: f"a whole number (at most {INT64_MAX})", float: "a number"}
TRUE_WORDS, FALSE_WORDS = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _coerce(attack: str, key: str, value: Any, default: Any) -> Any:
    """``value`` as the type of ``default`` (a ``--set`` value arrives as text)."""
    kind = type(default)
    text = str(value).strip().lower()
    if kind is bool:
        if isinstance(value, bool):
            return value
        if text in TRUE_WORDS + FALSE_WORDS:
            return text in TRUE_WORDS
    elif kind is int:
        number = value if isinstance(value, int) and not isinstance(value, bool) else whole_number(text)
        if number is not None and abs(number) <= INT64_MAX:  # what torch and the store hold
            return number
    elif kind is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        decimal = decimal_number(text)
        if decimal is not None:
            return decimal
    else:
        return str(value)
    raise UserError(f"{attack}.{key} must be {KIND_WORDS.get(kind, kind.__name__)}, got {value!r}")


def apply_settings(attack: str, defaults: Mapping[str, Any], overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """``defaults`` updated by ``overrides``: the settings an attack runs with, each a known key, of its
    default's type, within its limit."""
    settings = dict(defaults)
    for key, value in (overrides or {}).items():
        if key not in defaults:
            valid = ", ".join(defaults) or "none"
            raise UserError(f"attack {attack} has no setting {key!r}{closest(key, defaults)}; valid keys: {valid}")
        settings[key] = _coerce(attack, key, value, defaults[key])
        limit = SETTING_LIMITS.get(key)
        if limit is not None and not isinstance(settings[key], bool) and not limit.allows(settings[key]):
            raise UserError(f"{attack}.{key} must be {limit.describe()}, got {value!r}")
    return settings


def spsa_before_pairs(stored: Mapping[str, Any]) -> dict[str, Any]:
    """SPSA settings stored before ``samples`` counted +/- pairs (they have no ``keep_best``): then
    ``samples`` counted evaluated inputs (128 = 64 pairs), and every run kept the best iterate and
    estimated the gradient around the iterate; read in today's meaning, they say what ran."""
    out = dict(stored)
    if "keep_best" in out:
        return out
    if "samples" in out:
        out["samples"] = int(out["samples"]) // 2
    return {**out, "keep_best": True, "estimate_at_2x": False}


# How to read the settings an earlier robeval stored, per attack whose settings changed meaning
STORED_FORMATS: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {"spsa": spsa_before_pairs}

# Settings that only split the work (images per forward pass): runs that differ in them ran the same attack
WORK_SPLIT = frozenset({"max_batch"})


def read_stored_settings(stored: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """A run's stored attack settings in today's meaning (:data:`STORED_FORMATS`): what the store
    hands back, so that tables, comparisons, resumes and regeneration see what ran."""
    return {attack: STORED_FORMATS.get(attack, dict)(values) for attack, values in stored.items()}


def parse_set_items(items: list[str]) -> dict[str, dict[str, str]]:
    """``["pgd.steps=50", ...]`` -> ``{"pgd": {"steps": "50"}}`` (the text of ``--set``; the values are
    judged by :func:`apply_settings`); one line for an item of another shape."""
    out: dict[str, dict[str, str]] = {}
    for item in items:
        target, eq, value = item.partition("=")
        attack, dot, key = target.strip().partition(".")
        if not eq or not dot or not attack or not key.strip():
            raise UserError(f"--set {item!r}: expected ATTACK.KEY=VALUE, e.g. pgd.steps=50")
        out.setdefault(attack, {})[key.strip()] = value.strip()
    return out

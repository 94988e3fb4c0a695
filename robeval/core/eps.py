"""Parsing of perturbation budgets written as ``N/255``, decimals, or comma lists of those."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from .errors import UserError
from .numbers import decimal_number

NORMS = ("Linf", "L2")
SAME_BUDGET = 1e-9  # two budgets closer than this are one (8/255 and 0.0313725490196)


@dataclass(frozen=True)
class Eps:
    """A budget as the user wrote it (``text``) and its value (``value``)."""

    text: str
    value: float

    def __str__(self) -> str:
        return self.text


def _parse_number(text: str) -> float:
    number = decimal_number(text)
    if number is None:
        raise UserError(f"invalid eps {text!r}: expected N/255, a decimal, or a comma list")
    return number


def parse_one(text: str, norm: str = "Linf") -> Eps:
    """Parse one budget; raise :class:`UserError` for anything that is not a usable eps."""
    raw = text.strip()  # an empty text is refused as no number, by _parse_number
    if "/" in raw:
        num, _, den = raw.partition("/")
        n, d = _parse_number(num.strip()), _parse_number(den.strip())
        if d == 0:
            raise UserError(f"invalid eps {raw!r}: division by zero")
        value = n / d
    else:
        value = _parse_number(raw)
    if math.isnan(value) or math.isinf(value):
        raise UserError(f"invalid eps {raw!r}: must be a finite number")
    if value < 0:
        raise UserError(f"invalid eps {raw!r}: must not be negative")
    if norm == "Linf" and value > 1:
        raise UserError(f"invalid eps {raw!r}: an Linf budget above 1 exceeds the [0,1] image range")
    return Eps(raw, value)


def parse_eps_list(texts: str | list[str] | tuple[str, ...] | float, norm: str = "Linf") -> list[Eps]:
    """Parse ``"1/255,2/255"`` or a list of such strings (or numbers) into :class:`Eps` values."""
    if norm not in NORMS:
        raise UserError(f"invalid norm {norm!r}: choose one of {', '.join(NORMS)}")
    if isinstance(texts, (int, float)):
        texts = [repr(float(texts))]
    if isinstance(texts, str):
        texts = [texts]
    parts = [p for t in texts for p in str(t).split(",")]
    out: list[Eps] = []
    for part in parts:
        eps = parse_one(part, norm)
        same = next((e for e in out if abs(e.value - eps.value) <= SAME_BUDGET), None)
        if same is not None and same.text != eps.text:
            raise UserError(f"--eps {same.text} and {eps.text} are the same budget ({eps.value:.10g}): give it once")
        if same is None:
            out.append(eps)
    if not out:
        raise UserError("no eps given")
    return out


def find_budget(stored: Iterable[str], wanted: str, norm: str = "Linf", tolerance: float = SAME_BUDGET) -> str | None:
    """The budget among ``stored`` (as a run wrote them) that ``wanted`` names: written the same, or the
    same value within ``tolerance``; None if none is."""
    value = parse_one(str(wanted), norm).value
    same = [e for e in stored if e == str(wanted).strip() or abs(parse_one(e, norm).value - value) <= tolerance]
    return same[0] if same else None


def eps_label(value: float) -> str:
    """Show a budget as ``N/255`` where it is one (for plots and captions)."""
    n = value * 255
    if abs(n - round(n)) < 1e-6:
        return f"{int(round(n))}/255"
    return f"{value:g}"

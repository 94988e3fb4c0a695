"""Numbers written as text, read one way everywhere: ASCII digits, an optional sign, a decimal point and
exponent for decimals (docs/hardening.md, item 10).  Python's ``int`` and ``float`` are not that grammar
and ``str.isdigit`` accepts characters they refuse (``"²"``), so a reader that checks with one and
converts with the other answers some text with a traceback; these two functions answer any text with a
number or None, and the caller says in one line what it expected.  Torch-free.
"""

from __future__ import annotations

import re

WHOLE = re.compile(r"[+-]?[0-9]+")
DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?(nan|inf|infinity)", re.IGNORECASE)
INT64_MAX = 2**63 - 1  # the largest whole number torch's int64 and SQLite's INTEGER hold
MAX_DIGITS = 4000  # below int()'s limit of 4300 digits; no count robeval takes comes near it


def whole_number(text: str) -> int | None:
    """The whole number ``text`` writes (``"12"``, ``"-3"``, ``"+7"``), or None for any other text."""
    text = str(text)
    if len(text) > MAX_DIGITS or not WHOLE.fullmatch(text):
        return None
    return int(text)


def decimal_number(text: str) -> float | None:
    """The number ``text`` writes as a decimal (``"0.5"``, ``"3"``, ``"1e-3"``, ``".5"``; ``"nan"`` and
    ``"inf"`` as Python writes them, for the caller's range to refuse), or None for any other text."""
    text = str(text)
    return float(text) if DECIMAL.fullmatch(text) else None

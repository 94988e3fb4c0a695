"""JSON that robeval did not write itself, read within limits (docs/hardening.md, item 3).  Python's parser
recurses once per nesting level, so a few kilobytes nested ten thousand deep raise ``RecursionError``: the
depth is counted first, without parsing, and the size is bounded.  Torch-free.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .errors import UserError

MAX_BYTES = 16 << 20  # no JSON robeval reads is near this (a model-info file: ~1 KB; a run's config: ~10 KB)
MAX_DEPTH = 64  # a run's stored configuration nests 5 deep; a model-info file 1
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')  # strings (skipped whole) and brackets


def nesting_depth(text: str) -> int:
    """The deepest nesting of ``[`` / ``{`` in ``text``, brackets inside strings not counted."""
    depth = deepest = 0
    for token in _TOKENS.finditer(text):
        bracket = token.group()
        if bracket in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif bracket in "]}":
            depth -= 1
    return deepest


def load_json(data: str | bytes, what: str, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH) -> Any:
    """``data`` parsed, or one :class:`UserError` naming ``what`` when it is larger than ``max_bytes``,
    nested deeper than ``max_depth``, not UTF-8 or not JSON."""
    if len(data) > max_bytes:
        raise UserError(f"{what} is {len(data)} bytes of JSON, more than robeval reads ({max_bytes}); refused unread")
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError:
        raise UserError(f"{what} is not JSON (not UTF-8 text)") from None
    depth = nesting_depth(text)
    if depth > max_depth:
        raise UserError(f"{what} nests {depth} levels deep, more than robeval reads ({max_depth}); refused unparsed")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, or an integer of 5,000 digits
        raise UserError(f"{what} is not JSON ({str(exc).splitlines()[0][:120]})") from None

"""Text from outside (a store, a checkpoint, a file name, a label) as characters that only show.

Control characters are what lets a name act instead of show: a newline forges a line or a table row,
an escape sequence drives the terminal, a bidirectional override reorders what a reader sees.  A name
(a model, attack, eps or run id) may hold none of them: robeval refuses such a label when it is given
and such a store when it is read (:func:`refuse_controls`).  Free text (a data path, a file name, a
class name, a message) keeps them, and each format shows them as visible escapes
(:func:`visible_controls`): every renderer (robeval.report.escaping) starts from it.

Torch-free, the ground floor: the command line checks labels before anything loads.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .errors import UserError

# C0 and C1 controls, DEL, the line and paragraph separators, and the bidirectional embeddings, overrides
# and isolates (U+202A-U+202E, U+2066-U+2069: "Trojan Source")
CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    return _NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


def visible_controls(text: str) -> str:
    """``text`` with each control character written as its escape (a newline as ``\\n``, ESC as ``\\x1b``)."""
    return CONTROLS.sub(_escaped, text)


def has_controls(text: str) -> bool:
    return CONTROLS.search(text) is not None


def refuse_controls(names: Iterable[object], what: str, where: str) -> None:
    """One line when a name holds a control character (a name is shown, never acts: the module docstring)."""
    for name in names:
        if isinstance(name, str) and has_controls(name):
            raise UserError(
                f"{what} '{visible_controls(name)}' in {where} holds a control character (a line break, an escape "
                "sequence or a text-direction override): a name must be one line of printable text"
            )

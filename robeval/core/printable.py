"""Text from outside (a store, a checkpoint, a file name, a label) as characters that only show.

A name (a model, attack, eps or run id) may hold only characters that show as themselves; which characters
are *hidden* (:func:`is_hidden`), why, and where names are refused or compared in NFKC form (:func:`read_alike`):
docs/hardening.md, item 9.  Category Cn is judged by the Unicode version of the running Python
(``unicodedata.unidata_version``).  Free text keeps hidden characters and each format shows them as escapes
(:func:`visible_controls`): every renderer (robeval.report.escaping) starts from it.  Torch-free: the command
line checks labels before anything loads.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

from .errors import UserError

# Printable ASCII shows as itself; every other character is judged by :func:`is_hidden`.
_JUDGED = re.compile("[^ -~]")
# Invisible, though Unicode's category is a letter's, a mark's or a symbol's (its Default_Ignorable_Code_Point
# characters outside C and Z), and the blank braille pattern U+2800.
_BLANK = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2800\u3164\ufe00-\ufe0f\uffa0\U000e0100-\U000e01ef]")
# The hidden characters a refusal calls control characters: C0 and C1 controls, DEL, the line and paragraph
# separators, the bidirectional embeddings, overrides and isolates.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_NO_GLYPH = "a character with no agreed glyph (unassigned, private use or a lone surrogate)"
_KINDS = {"Zs": "a space other than the plain space U+0020", "Cn": _NO_GLYPH, "Co": _NO_GLYPH, "Cs": _NO_GLYPH}


def is_hidden(char: str) -> bool:
    """Whether ``char`` (one character) does not show as itself: C (controls, format, no glyph), Z but U+0020, or blank."""
    return bool(_JUDGED.match(char)) and (unicodedata.category(char)[0] in "CZ" or bool(_BLANK.match(char)))


def _escaped(char: str) -> str:
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible_controls(text: str, kept: str = "") -> str:
    """``text`` with each hidden character but those in ``kept`` written as its escape: a newline as
    ``\\n``, ESC as ``\\x1b``, the zero-width space as ``\\u200b``, a tag as ``\\U000e0041``."""

    def shown(match: re.Match[str]) -> str:
        char = match.group()
        return _escaped(char) if char not in kept and is_hidden(char) else char

    return _JUDGED.sub(shown, text)


def first_hidden(text: str) -> str | None:
    """The first hidden character of ``text``, or None."""
    return next((m.group() for m in _JUDGED.finditer(text) if is_hidden(m.group())), None)


def _kind(char: str) -> str:
    if _CONTROLS.match(char):
        return "a control character (a line break, an escape sequence or a text-direction override)"
    return _KINDS.get(unicodedata.category(char), "an invisible character")


def refuse_hidden(names: Iterable[object], what: str, where: str) -> None:
    """One line when a name holds a hidden character, naming it by its code point."""
    for name in names:
        if isinstance(name, str) and (char := first_hidden(name)) is not None:
            raise UserError(
                f"{what} '{visible_controls(name)}' in {where} holds U+{ord(char):04X}, {_kind(char)}: a name "
                "must be one line of printable text that shows as what it is"
            )


def read_alike(names: Sequence[str]) -> tuple[int, int] | None:
    """The positions of the first two of ``names`` that read as one name (equal in Unicode's NFKC form:
    ``digits``, ``ｄｉｇｉｔｓ``; ``fi``, ``ﬁ``), or None: the one way robeval tells names apart."""
    seen: dict[str, int] = {}
    for position, name in enumerate(names):
        first = seen.setdefault(unicodedata.normalize("NFKC", name), position)
        if first != position:
            return first, position
    return None


def as_one(first: str, second: str) -> str:
    """Two names :func:`read_alike` found, for a message: the name, or both and why they are one."""
    return (
        repr(first)
        if first == second
        else f"{first!r} and {second!r}, which read as one (equal in Unicode's NFKC form)"
    )

"""Text from outside (a store, a checkpoint, a file name, a label) as characters that only show.

A name (a model, attack, eps or run id) is what a reader sees, so it may hold only characters that show as
themselves.  A *hidden* character (:func:`is_hidden`) is one that does not:

* a control character (Unicode category Cc, the line and paragraph separators Zl and Zp): a newline forges
  a line or a table row, an escape sequence drives the terminal;
* a format character (Cf): the zero-width space U+200B and joiners U+200C/D, the direction marks U+200E/F
  and U+061C and the bidirectional embeddings, overrides and isolates U+202A-E and U+2066-9 ("Trojan
  Source": they reorder what a reader sees), the word joiner U+2060 and the invisible operators, U+FEFF,
  the soft hyphen U+00AD, U+180E, the tags U+E0001 and U+E0020-E007F, and every other Cf;
* a space other than the plain one U+0020 (Zs: U+00A0, U+2000-200A, U+202F, U+205F, U+3000, ...), which
  reads as that space or as nothing;
* a character with no agreed glyph (Cn: unassigned in the Unicode version of the running Python,
  ``unicodedata.unidata_version``, noncharacters included; Co: private use; Cs: a lone surrogate, as an
  undecodable byte of a file name becomes): each font or terminal draws it its own way, often as one box;
* the invisible characters Unicode files under letters, marks or symbols (its Default_Ignorable_Code_Point
  characters outside C and Z): the combining grapheme joiner U+034F, the Hangul fillers U+115F, U+1160,
  U+3164 and U+FFA0, the Khmer inherent vowels U+17B4/5, the Mongolian variation selectors U+180B-D and
  U+180F, the variation selectors U+FE00-FE0F and U+E0100-E01EF; and the blank braille pattern U+2800.

Visible combining marks, letters of any script and symbols are no hidden characters: they show.
robeval refuses a name that holds a hidden character when it is given and such a store when it is read
(:func:`refuse_hidden`), in one line naming the character by its code point.  Two names that differ
only in compatibility forms (full-width letters, ligatures: ``ｄｉｇｉｔｓ`` and ``digits``, ``ﬁ`` and
``fi``) read as one: names are told apart in their NFKC form, by one function (:func:`read_alike`).
Free text (a data path, a file name, a class name, a message) keeps hidden characters, and each format
shows them as visible escapes (:func:`visible_controls`): every renderer (robeval.report.escaping) starts
from it.

Torch-free, the ground floor: the command line checks labels before anything loads.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

from .errors import UserError

# Printable ASCII shows as itself; every other character is judged by :func:`is_hidden`.
_JUDGED = re.compile("[^ -~]")
# Invisible, though Unicode's category is a letter's, a mark's or a symbol's (see the module docstring).
_BLANK = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2800\u3164\ufe00-\ufe0f\uffa0\U000e0100-\U000e01ef]")
# The hidden characters a refusal calls control characters: C0 and C1 controls, DEL, the line and paragraph
# separators, the bidirectional embeddings, overrides and isolates.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_NO_GLYPH = "a character with no agreed glyph (unassigned, private use or a lone surrogate)"
_KINDS = {"Zs": "a space other than the plain space U+0020", "Cn": _NO_GLYPH, "Co": _NO_GLYPH, "Cs": _NO_GLYPH}


def is_hidden(char: str) -> bool:
    """Whether ``char`` (one character) is hidden: it does not show as itself (the module docstring)."""
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
    """One line when a name holds a hidden character, naming it by its code point (a name is shown, never
    acts and never hides: the module docstring)."""
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

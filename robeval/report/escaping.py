"""How each output format shows a text: the one place each format escapes what it is given.

Every text a document shows is data and never acts as markup, a formula or script: what each format
does with it is docs/hardening.md, rule 9 ("Text from outside only shows").  Each renderer passes text
through its format's function here and nothing else escapes.  HTML quotes both quote characters, so a
text is safe in quoted attributes too; LaTeX replaces in one pass, so a replacement is never escaped again.

Control and invisible characters go first (robeval.core.printable.visible_controls); the escape their
backslash needs is then the format's own.
"""

from __future__ import annotations

import html as _html
import re
from typing import TYPE_CHECKING, Any

from rich.console import Console

from ..core.printable import visible_controls

if TYPE_CHECKING:
    import pandas as pd

# always: a backslash, code, emphasis, raw HTML and autolinks, a table cell's bar, math, strikethrough; ``&``
# where it starts an entity (``&lt;``); ``_`` where it can delimit emphasis (not inside a word: ``deit_small``);
# ``]`` where it could close a link or image (``](``, ``][``; a shortcut link needs a definition, which only a
# line's start can hold: :data:`_MARKDOWN_LEADING`)
_MARKDOWN_SPECIAL = re.compile(r"[\\`*<|$~]|&(?=#?[0-9A-Za-z]+;)|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])|\](?=[(\[])")
# at the start of a line: a quote; a list item, numbered item or heading (their marker and a space); a
# setext underline or thematic break (a marker repeated); a link definition (``[label]:``)
_MARKDOWN_LEADING = re.compile(r"^(\s*\d{0,9})(>|[-+*#=.)](?=\s|$|[-=*#])|\[(?=[^\]]*\]:))")


def markdown(text: object) -> str:
    """``text`` as inline Markdown (a cell, a heading, the middle of a line) that shows exactly it."""
    return visible_controls(_MARKDOWN_SPECIAL.sub(lambda m: "\\" + m.group(), str(text)))


def markdown_line(text: object) -> str:
    """``text`` as Markdown that starts a line (a paragraph, a list item's text): also no block marker."""
    return _MARKDOWN_LEADING.sub(lambda m: m.group(1) + "\\" + m.group(2), markdown(text))


_LATEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    "[": "{[}",
    "]": "{]}",
    "±": r"$\pm$",
    "†": r"$^\dagger$",
}  # fmt: skip  (a bracket in braces: ``\\`` never reads the next cell as its optional argument; the two signs
#   robeval's own text uses in math, which pdflatex typesets without a Unicode font)
_LATEX_SPECIAL = re.compile("|".join(map(re.escape, _LATEX)))


def latex(text: object) -> str:
    """``text`` as LaTeX text that typesets exactly it (``a\\b`` -> ``a\\textbackslash{}b``)."""
    return _LATEX_SPECIAL.sub(lambda m: _LATEX[m.group()], visible_controls(str(text)))


def html(text: object) -> str:
    """``text`` as HTML text or a quoted attribute's value."""
    return _html.escape(str(text), quote=True)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def csv_cell(value: object) -> object:
    """A CSV cell that a spreadsheet shows and never evaluates: numbers as they are, a text that would
    start a formula behind a ``'`` (a text that is a plain number, ``-0.5``, stays as it is)."""
    if not isinstance(value, str) or not value.startswith(_FORMULA_START) or _PLAIN_NUMBER.fullmatch(value):
        return value
    return "'" + value


def csv_text(frame: pd.DataFrame, index: bool = False, index_label: str | None = None) -> str:
    """``frame`` as CSV with every text cell, column name and index label through :func:`csv_cell`: the
    one way robeval writes a CSV file."""
    shown = frame.map(csv_cell)
    shown.columns = [csv_cell(str(c)) for c in frame.columns]
    if index:
        shown.index = [csv_cell(i) for i in frame.index]
    return shown.to_csv(index=index, index_label=index_label)


def terminal(text: object) -> str:
    """``text`` for the terminal: each control or invisible character but a line break or tab as its escape."""
    return visible_controls(str(text), kept="\n\t")


class TerminalConsole(Console):
    """The console every command prints through: each text it is given (a line, a table's cell, a title)
    shows as :func:`terminal` writes it, and rich's markup and emoji codes are never read from it (a
    model named ``[bold]x`` shows those characters)."""

    def render_str(self, text: str, **options: Any):  # rich.console.Console.render_str's keywords
        return super().render_str(terminal(text), **{**options, "markup": False, "emoji": False})

"""One document model for what robeval writes as text (its blocks: docs/layout.md), built by the code
that knows the facts and rendered late, by one renderer per format (the terminal's is
robeval.report.terminal.to_rich).  Every text in a block is plain text, and each renderer escapes it in
one place (robeval.report.escaping): no document builds markup by hand.  A caption is a list of phrases,
a :class:`Formula` among them where a phrase has math (the budget: LaTeX writes it as math); every table
and grid is drawn by robeval.report.grid.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import grid as grids
from .escaping import csv_text, html, latex, markdown, markdown_line
from .grid import Grid, html_table, markdown_table

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Paragraph:
    text: str
    strong: bool = False
    css: str = ""  # the HTML class (``note``, ``verdict``); Markdown has none


@dataclass(frozen=True)
class Lines:
    """Lines of text that belong together (a command's answer): one after another, no blank line between."""

    lines: Sequence[str]


@dataclass(frozen=True)
class Table:
    head: Sequence[str]
    rows: Sequence[Sequence[object]]
    align: str = ""  # Markdown: "l" or "r" per column (default: the first left, the others right)
    text_columns: Sequence[int] = field(default_factory=tuple)  # HTML, terminal: the columns aligned as text
    sortable: bool = False  # HTML: sorted by a click on a header (the report's script)
    title: str = ""  # the terminal: the title centred above the table (a listing's)

    @classmethod
    def of(cls, frame, text_columns: Sequence[str] = (), sortable: bool = True) -> Table:
        """A plain DataFrame as a table (its index not shown; ``text_columns`` named)."""
        rows = [list(row) for row in frame.itertuples(index=False)]
        text = [i for i, c in enumerate(frame.columns) if c in text_columns]
        return cls([str(c) for c in frame.columns], rows, text_columns=text, sortable=sortable)


class Formula(str):
    """A caption's phrase with math in it: the text every format but LaTeX shows, and its LaTeX (written
    by robeval, escaped where it holds text)."""

    latex: str

    def __new__(cls, text: str, latex: str) -> Formula:
        phrase = super().__new__(cls, text)
        phrase.latex = latex
        return phrase


@dataclass(frozen=True, eq=False)
class Values:
    """The values behind a document, as they are (a summary, a comparison's numbers, a profile): what the
    data formats (CSV, JSON, RobustBench's) write, and the drawing formats leave out."""

    frame: pd.DataFrame


Block = Heading | Paragraph | Lines | Table | Grid | Values
Document = list[Block]


def drawn(document: Document) -> list[Block]:
    """The blocks a drawing format shows (Markdown, HTML, LaTeX, the terminal): all but the values."""
    return [block for block in document if not isinstance(block, Values)]


def values_of(document: Document) -> pd.DataFrame:
    """The values a document carries (the first :class:`Values`)."""
    return next(block.frame for block in document if isinstance(block, Values))


Drawing = dict[type, Callable[[Any], str]]  # a format's way of writing each kind of block

MARKDOWN: Drawing = {
    Grid: grids.to_markdown,
    Heading: lambda block: f"{'#' * block.level} {markdown(block.text)}",
    Paragraph: lambda block: f"**{markdown(block.text)}**" if block.strong else markdown_line(block.text),
    Lines: lambda block: "\n".join(markdown_line(line) for line in block.lines),
    Table: lambda block: markdown_table(block.head, block.rows, block.align),
}


def to_markdown(document: Document) -> str:
    """The document as Markdown: blocks a blank line apart, a line break at the end."""
    return "\n\n".join(MARKDOWN[type(block)](block) for block in drawn(document)) + "\n"


def _html_paragraph(block: Paragraph) -> str:
    body = f"<strong>{html(block.text)}</strong>" if block.strong else html(block.text)
    return f'<p class="{html(block.css)}">{body}</p>' if block.css else f"<p>{body}</p>"


HTML: Drawing = {
    Grid: grids.to_html,
    Heading: lambda block: f"<h{block.level}>{html(block.text)}</h{block.level}>",
    Paragraph: _html_paragraph,
    Lines: lambda block: "".join(f"<p>{html(line)}</p>" for line in block.lines),
    Table: lambda block: html_table(block.head, block.rows, block.text_columns, block.sortable),
}


def to_html(document: Document) -> str:
    """The document as an HTML fragment (the report's sections embed it)."""
    return "".join(HTML[type(block)](block) for block in drawn(document))


LATEX: Drawing = {
    Grid: lambda block: grids.to_latex(
        block, "; ".join(p.latex if isinstance(p, Formula) else latex(p) for p in block.caption)
    ),
    Heading: lambda block: rf"\paragraph{{{latex(block.text)}}}",
    Paragraph: lambda block: rf"\textbf{{{latex(block.text)}}}" if block.strong else latex(block.text),
    Lines: lambda block: " \\\\\n".join(latex(line) for line in block.lines),  # a line break: \\
    Table: lambda block: grids.to_latex(_as_grid(block), ""),
}


def _as_grid(table: Table) -> Grid:
    """A table as a grid: its first column the rows, under its first header."""
    import pandas as pd  # here: a listing (robeval models) starts without pandas

    frame = pd.DataFrame([list(row)[1:] for row in table.rows], columns=list(table.head)[1:])
    frame.index = pd.Index([list(row)[0] for row in table.rows])
    return Grid(frame, (), corner=str(table.head[0]))


def to_latex(document: Document) -> str:
    """The document as LaTeX (a grid or table a ``table`` float, needing no package), blocks a blank line apart."""
    return "\n\n".join(LATEX[type(block)](block) for block in drawn(document)) + "\n"


def to_csv(document: Document) -> str:
    """The document's values as CSV where it carries them; else its tables and grids, a blank line apart (a
    two-level column's name joined: ``Clean Top-1``; the rows' label column unnamed).  Text blocks hold no
    data and are left out."""
    if any(isinstance(block, Values) for block in document):
        return csv_text(values_of(document))
    grids_of = [
        block if isinstance(block, Grid) else _as_grid(block) for block in document if isinstance(block, (Grid, Table))
    ]
    return "\n".join(map(_grid_csv, grids_of))


def _grid_csv(block: Grid) -> str:
    flat = block.frame.copy()
    if flat.columns.nlevels > 1:
        flat.columns = [f"{a} {b}" for a, b in flat.columns]
    return csv_text(flat, index=True, index_label="")


def to_json(document: Document) -> str:
    """The document's values as standard JSON, a list of rows: a missing number (NaN) is null, an unbounded
    one (a minimum-norm attack that found nothing) the string "inf"."""

    def plain(value):
        if isinstance(value, float) and not math.isfinite(value):
            return None if math.isnan(value) else str(value)
        return value

    rows = [{k: plain(v) for k, v in row.items()} for row in values_of(document).to_dict(orient="records")]
    return json.dumps(rows, indent=2, default=str, allow_nan=False) + "\n"

"""The one renderer of a table's grid as Markdown, LaTeX or HTML: rows = the index, columns one level
(``Top-1 (%)``) or two (``(attack, Top-1)``: grouped under a LaTeX multicolumn), cells as they are
(every text escaped by its format's function, robeval.report.escaping: a model's name shows as the
characters it is; a :class:`Measured` number as each format writes it: ``97.80 ± 0.40``, in LaTeX
``$97.80 \\pm 0.40$``), ``bold`` a set of (row, column) cells to mark (``noted`` and ``apart``: cells
with a footnote mark instead, :data:`MARKS`).  Every Markdown table robeval
writes is :func:`markdown_table`'s."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.defaults import STD
from .escaping import html as escape
from .escaping import latex as latex_escape
from .escaping import markdown

if TYPE_CHECKING:
    import pandas as pd

Cell = tuple[object, object]


@dataclass(frozen=True)
class Measured:
    """A percentage a table shows: one value, or the mean over a model's members (checkpoints of one
    training procedure) with their sample standard deviation."""

    value: float
    std: float | None = None

    @classmethod
    def of(cls, row: Mapping[str, Any], metric: str) -> Measured:
        """``row[metric]``, with the std over the model's members where ``row`` has ``<metric>_std``."""
        import pandas as pd  # here: a listing that draws no grid (robeval models) starts without pandas

        std = row.get(metric + STD)
        return cls(float(row[metric]), None if std is None or pd.isna(std) else float(std))

    @property
    def shown(self) -> str:
        """The value as printed (what a tie for the best of a column is judged on)."""
        return f"{self.value:.2f}"

    def __str__(self) -> str:
        return self.shown if self.std is None else f"{self.shown} ± {self.std:.2f}"

    def html(self) -> str:
        """The value as HTML, the std over members in a smaller font (as papers print it: the report's style
        sizes ``span.std``), so that a cell of mean ± std stays one short line."""
        if self.std is None:
            return escape(self.shown)
        return f'{escape(self.shown)}<span class="std"> ± {escape(f"{self.std:.2f}")}</span>'

    def latex(self, bold: bool) -> str:
        if self.std is None:
            return rf"\textbf{{{self.shown}}}" if bold else self.shown
        body = rf"{self.shown} \pm {self.std:.2f}"
        return rf"$\mathbf{{{body}}}$" if bold else f"${body}$"


def _two_levels(grid: pd.DataFrame) -> bool:
    return grid.columns.nlevels > 1  # (attack, Top-1)


# how a cell is marked: a separated best, a best only footnoted, a separated best of models trained apart
BOLD, NOTED, APART = "bold", "noted", "apart"
MARK = "†"  # the footnote mark of a best the claim test does not separate (robeval.report.bests)
RECIPES_MARK = "‡"  # the mark of a best it separates from a model trained with another recipe
MARKS = {NOTED: MARK, APART: RECIPES_MARK}  # each footnote mark as text
LATEX_MARKS = {NOTED: r"$^\dagger$", APART: r"$^\ddagger$"}


def marked_rows(
    grid: pd.DataFrame, bold: Collection[Cell], noted: Collection[Cell], apart: Collection[Cell] = ()
) -> list[tuple[str, list[tuple[object, str]]]]:
    """Per row its label and its cells as (value, mark: :data:`BOLD`, :data:`NOTED`, :data:`APART` or "")."""
    marks = {**dict.fromkeys(apart, APART), **dict.fromkeys(noted, NOTED), **dict.fromkeys(bold, BOLD)}
    return [
        (str(index), [(value, marks.get((index, c), "")) for c, value in row.items()]) for index, row in grid.iterrows()
    ]


def _latex_cell(value: object, mark: str) -> str:
    bold = mark == BOLD
    if isinstance(value, Measured):
        shown = value.latex(bold)
    else:
        shown = rf"\textbf{{{latex_escape(str(value))}}}" if bold else latex_escape(str(value))
    return shown + LATEX_MARKS.get(mark, "")


class Strong(str):
    """A cell's text to show in bold (the renderer escapes it, then marks it)."""


class Noted(str):
    """A cell's text to show with the footnote mark :data:`MARK` (the renderer escapes it, then marks it)."""

    mark = MARK


class Apart(Noted):
    """A cell's text to show with the mark :data:`RECIPES_MARK` (a best of models trained apart)."""

    mark = RECIPES_MARK


def markdown_cell(value: object) -> str:
    """One cell as Markdown: its text escaped (robeval.report.escaping), bold where it is :class:`Strong`,
    marked where it is :class:`Noted` (or :class:`Apart`)."""
    text = markdown(value)
    if isinstance(value, Strong) and text:
        return f"**{text}**"
    return text + value.mark if isinstance(value, Noted) and text else text


def markdown_table(head: Sequence[object], rows: Iterable[Iterable[object]], align: str = "") -> str:
    """A Markdown table: the ``head`` cells (an empty one stays empty: ``| | Top-1 |``), its rule
    (``align``: ``l`` or ``r`` per column; by default the first column left, the others right), the rows;
    every cell is text, escaped here (:func:`markdown_cell`), so no cell adds a row or a column."""
    align = align or "l" + "r" * (len(head) - 1)
    assert len(align) == len(head), (head, align)
    line = "|" + "".join(f" {markdown_cell(cell)} |" if str(cell) else " |" for cell in head)
    rule = "|" + "".join("---|" if a == "l" else "---:|" for a in align)
    body = ("| " + " | ".join(map(markdown_cell, row)) + " |" for row in rows)
    return "\n".join([line, rule, *body])


TYPED = {BOLD: Strong, NOTED: Noted, APART: Apart}


def to_markdown(
    grid: pd.DataFrame,
    caption: str,
    corner: str = "Model",
    bold: Collection[Cell] = (),
    noted: Collection[Cell] = (),
    apart: Collection[Cell] = (),
) -> str:
    """``Table: caption``, then the grid (two-level columns joined: ``Clean Top-1``)."""
    names = [f"{a} {b}" for a, b in grid.columns] if _two_levels(grid) else list(grid.columns)
    marked = marked_rows(grid, bold, noted, apart)
    rows = ([index, *(TYPED[m](v) if m else v for v, m in cells)] for index, cells in marked)
    return f"Table: {markdown(caption)}\n\n{markdown_table([corner, *names], rows)}"


def _latex_row(cells: Iterable[str]) -> str:
    return " & ".join(cells) + r" \\"


def to_latex(
    grid: pd.DataFrame,
    caption: str,
    corner: str = "Model",
    bold: Collection[Cell] = (),
    noted: Collection[Cell] = (),
    apart: Collection[Cell] = (),
) -> str:
    """A ``table`` with a plain ``tabular`` (no packages needed); ``caption`` is LaTeX already."""
    corner = latex_escape(corner)
    if _two_levels(grid):
        groups = list(dict.fromkeys(a for a, _ in grid.columns))
        subs = [latex_escape(str(b)) for a, b in grid.columns if a == groups[0]]
        spans = [rf"\multicolumn{{{len(subs)}}}{{c}}{{{latex_escape(str(g))}}}" for g in groups]
        head = [_latex_row([corner, *spans]), _latex_row(["", *subs * len(groups)])]
        cols = "l" + ("|" + "c" * len(subs)) * len(groups)
    else:
        head = [_latex_row([corner, *(latex_escape(str(c)) for c in grid.columns)])]
        cols = "l" + "r" * len(grid.columns)
    rows = [
        _latex_row([latex_escape(index), *(_latex_cell(v, m) for v, m in cells)])
        for index, cells in marked_rows(grid, bold, noted, apart)
    ]
    top = [r"\begin{table}[t]", r"\centering", rf"\caption{{{caption}}}", rf"\begin{{tabular}}{{{cols}}}", r"\hline"]
    return "\n".join([*top, *head, r"\hline", *rows, r"\hline", r"\end{tabular}", r"\end{table}"])


def to_html(
    grid: pd.DataFrame,
    caption: str,
    corner: str = "Model",
    bold: Collection[Cell] = (),
    noted: Collection[Cell] = (),
    apart: Collection[Cell] = (),
) -> str:
    """A ``<table>`` (class ``sortable``: the report's script sorts it by a header click) with the
    caption, two-level columns as grouped headers, the ``bold`` cells marked ``best``, the ``noted`` and
    ``apart`` ones with their footnote marks."""
    if _two_levels(grid):
        spans = Counter(a for a, _ in grid.columns)  # each group's columns, the groups in order
        top = "".join(f'<th colspan="{n}" scope="colgroup">{escape(str(g))}</th>' for g, n in spans.items())
        subs = "".join(f'<th scope="col" data-sort>{escape(str(b))}</th>' for _, b in grid.columns)
        head = f'<tr><th rowspan="2" scope="col" data-sort>{escape(corner)}</th>{top}</tr><tr>{subs}</tr>'
    else:
        cells = "".join(f'<th scope="col" data-sort>{escape(str(c))}</th>' for c in grid.columns)
        head = f'<tr><th scope="col" data-sort>{escape(corner)}</th>{cells}</tr>'
    body = "".join(
        f'<tr><th scope="row">{escape(index)}</th>{"".join(_html_cell(v, m) for v, m in cells)}</tr>'
        for index, cells in marked_rows(grid, bold, noted, apart)
    )
    return (
        f'<table class="sortable"><caption>{escape(caption)}</caption>'
        f"<thead>{head}</thead><tbody>{body}</tbody></table>"
    )


def _html_cell(value: object, mark: str) -> str:
    text = value.html() if isinstance(value, Measured) else escape(str(value))
    if mark == BOLD:
        return f'<td class="best"><strong>{text}</strong></td>'
    return f"<td>{text}{f'<sup>{MARKS[mark]}</sup>' if mark in MARKS else ''}</td>"

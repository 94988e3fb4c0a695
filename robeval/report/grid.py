"""How every table is drawn in Markdown, LaTeX and HTML: the typed cells, a paper table's :class:`Grid` (two
column levels grouped under a LaTeX multicolumn or an HTML colspan; its ``bold``, ``noted`` and ``apart``
cells marked, :data:`MARKS`) and a document's plain table, every text escaped by its format's function
(robeval.report.escaping).  Every Markdown table robeval writes is :func:`markdown_table`'s, every HTML
table :func:`_html_table`'s."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
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


class Status(str):
    """A checklist status (ok, RAISED, not run, n/a, note): HTML gives it the class its colour is."""

    @property
    def css(self) -> str:
        return "status-" + self.replace(" ", "-").replace("/", "-")


def shown_number(value: object) -> object:
    """A float as a table shows it: two decimals, or four significant digits when smaller than 0.001; a
    missing one empty; anything else as it is."""
    if not isinstance(value, float):
        return value
    if value != value:  # NaN
        return ""
    return f"{value:.4g}" if abs(value) < 1e-3 and value else f"{value:.2f}"


@dataclass(frozen=True, eq=False)
class Grid:
    """A paper table's block: ``frame``'s index the rows (under ``corner``), its columns one level or two
    (``(attack, Top-1)``), ``caption`` its phrases (joined by ``; ``), ``bold``, ``noted`` and ``apart`` the
    (row, column) cells a separated best, an unseparated one and a separated one of models trained with
    different recipes are (robeval.report.bests)."""

    frame: pd.DataFrame
    caption: Sequence[str]
    corner: str = "Model"
    bold: frozenset[Cell] = frozenset()
    noted: frozenset[Cell] = frozenset()
    apart: frozenset[Cell] = frozenset()

    @property
    def two_levels(self) -> bool:
        return self.frame.columns.nlevels > 1  # (attack, Top-1)


# how a cell is marked: a separated best, a best only footnoted, a separated best of models trained apart
BOLD, NOTED, APART = "bold", "noted", "apart"
MARK = "†"  # the footnote mark of a best the claim test does not separate (robeval.report.bests)
RECIPES_MARK = "‡"  # the mark of a best it separates from a model trained with another recipe
MARKS = {NOTED: MARK, APART: RECIPES_MARK}  # each footnote mark as text
LATEX_MARKS = {NOTED: r"$^\dagger$", APART: r"$^\ddagger$"}


def marked_rows(grid: Grid) -> list[tuple[str, list[tuple[object, str]]]]:
    """Per row its label and its cells as (value, mark: :data:`BOLD`, :data:`NOTED`, :data:`APART` or "")."""
    marks = {**dict.fromkeys(grid.apart, APART), **dict.fromkeys(grid.noted, NOTED), **dict.fromkeys(grid.bold, BOLD)}
    return [
        (str(index), [(value, marks.get((index, c), "")) for c, value in row.items()])
        for index, row in grid.frame.iterrows()
    ]


def _latex_cell(value: object, mark: str) -> str:
    bold = mark == BOLD
    if isinstance(value, Measured) and value.std is not None:  # mean \pm std, in math
        body = rf"{value.shown} \pm {value.std:.2f}"
        shown = rf"$\mathbf{{{body}}}$" if bold else f"${body}$"
    else:
        shown = rf"\textbf{{{latex_escape(value)}}}" if bold else latex_escape(value)
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


def to_markdown(grid: Grid) -> str:
    """``Table: caption``, then the grid (two-level columns joined: ``Clean Top-1``)."""
    frame = grid.frame
    names = [f"{a} {b}" for a, b in frame.columns] if grid.two_levels else list(frame.columns)
    rows = ([index, *(TYPED[m](v) if m else v for v, m in cells)] for index, cells in marked_rows(grid))
    return f"Table: {markdown('; '.join(grid.caption))}\n\n{markdown_table([grid.corner, *names], rows)}"


def _latex_row(cells: Iterable[str]) -> str:
    return " & ".join(cells) + r" \\"


def to_latex(grid: Grid, caption: str) -> str:
    """A ``table`` with a plain ``tabular`` (no packages needed); ``caption`` is LaTeX already."""
    frame, corner = grid.frame, latex_escape(grid.corner)
    if grid.two_levels:
        groups = list(dict.fromkeys(a for a, _ in frame.columns))
        subs = [latex_escape(str(b)) for a, b in frame.columns if a == groups[0]]
        spans = [rf"\multicolumn{{{len(subs)}}}{{c}}{{{latex_escape(str(g))}}}" for g in groups]
        head = [_latex_row([corner, *spans]), _latex_row(["", *subs * len(groups)])]
        cols = "l" + ("|" + "c" * len(subs)) * len(groups)
    else:
        head = [_latex_row([corner, *(latex_escape(str(c)) for c in frame.columns)])]
        cols = "l" + "r" * len(frame.columns)
    rows = [
        _latex_row([latex_escape(index), *(_latex_cell(v, m) for v, m in cells)]) for index, cells in marked_rows(grid)
    ]
    top = [r"\begin{table}[t]", r"\centering", rf"\caption{{{caption}}}", rf"\begin{{tabular}}{{{cols}}}", r"\hline"]
    return "\n".join([*top, *head, r"\hline", *rows, r"\hline", r"\end{tabular}", r"\end{table}"])


SORTED_TH = '<th scope="col" data-sort>'  # a header the report's script sorts by


def to_html(grid: Grid) -> str:
    """A sortable table under its caption, two-level columns as grouped headers, the ``bold`` cells marked
    ``best``, the ``noted`` and ``apart`` ones with their marks."""
    frame, corner = grid.frame, escape(grid.corner)
    if grid.two_levels:
        spans = Counter(a for a, _ in frame.columns)  # each group's columns, the groups in order
        top = "".join(f'<th colspan="{n}" scope="colgroup">{escape(g)}</th>' for g, n in spans.items())
        subs = "".join(f"{SORTED_TH}{escape(b)}</th>" for _, b in frame.columns)
        head = f'<tr><th rowspan="2" scope="col" data-sort>{corner}</th>{top}</tr><tr>{subs}</tr>'
    else:
        head = f"<tr>{SORTED_TH}{corner}</th>{''.join(f'{SORTED_TH}{escape(c)}</th>' for c in frame.columns)}</tr>"
    body = (
        f'<tr><th scope="row">{escape(index)}</th>{"".join(_html_cell(v, m) for v, m in cells)}</tr>'
        for index, cells in marked_rows(grid)
    )
    return _html_table(head, body, sortable=True, caption="; ".join(grid.caption))


def html_table(head: Sequence[object], rows: Iterable[Sequence[object]], text: Sequence[int], sortable: bool) -> str:
    """A document's plain table: its ``head`` (sortable, or aligned as text), its rows' cells as a table shows
    them (:func:`shown_number`), the ``text`` columns aligned as text."""
    th = SORTED_TH if sortable else '<th class="text">'
    heads = "".join(f"{th}{escape(h)}</th>" for h in head)
    cells = ("".join(_html_cell(shown_number(v), text=i in text) for i, v in enumerate(row)) for row in rows)
    return _html_table(f"<tr>{heads}</tr>", (f"<tr>{row}</tr>" for row in cells), sortable)


def _html_cell(value: object, mark: str = "", text: bool = False) -> str:
    """One cell: a :class:`Measured` with its std in a smaller font (as papers print it: the style sizes
    ``span.std``; a cell stays one short line), bold (class ``best``) or with its footnote mark; a ``text``
    one aligned as text, a :class:`Status` in its colour's class."""
    shown = escape(value)
    if isinstance(value, Measured) and value.std is not None:
        shown = f'{escape(value.shown)}<span class="std"> ± {value.std:.2f}</span>'
    if mark == BOLD:
        return f'<td class="best"><strong>{shown}</strong></td>'
    classes = " ".join([*(["text"] if text else []), *([value.css] if isinstance(value, Status) else [])])
    opening = f'<td class="{classes}">' if classes else "<td>"
    return f"{opening}{shown}{f'<sup>{MARKS[mark]}</sup>' if mark in MARKS else ''}</td>"


def _html_table(head: str, body: Iterable[str], sortable: bool, caption: str | None = None) -> str:
    """The one writer of an HTML table: its opening (class ``sortable``: the report's script sorts it by a
    header click), its caption, its head's rows and its body's."""
    opening = '<table class="sortable">' if sortable else "<table>"
    caption = "" if caption is None else f"<caption>{escape(caption)}</caption>"
    return f"{opening}{caption}<thead>{head}</thead><tbody>{''.join(body)}</tbody></table>"

"""Rich output: progress bars while a run works, and the terminal's renderer of a document (:func:`to_rich`):
every rich table robeval prints is built here."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TaskID, TextColumn
from rich.table import Column
from rich.table import Table as RichTable
from rich.text import Text

from ..evaluation.progress import Reporter
from .document import Document, Grid, Heading, Lines, Paragraph, Table, drawn
from .escaping import TerminalConsole, terminal
from .grid import BOLD, MARKS, Measured, marked_rows, shown_number


def compact(value: float) -> str:
    """``1234.5`` -> ``1.2k``: a rate that never widens its column."""
    for limit, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= limit:
            return f"{value / limit:.1f}{suffix}"
    return f"{value:.1f}"


class ImagesPerSecond(ProgressColumn):
    """Images per second of the attack's own work (the seconds its units took), not of the wall clock:
    the units of all attacks interleave batch by batch, so a wall-clock rate would mix them."""

    def render(self, task) -> Text:
        busy, images = task.fields.get("busy", 0.0), task.fields.get("timed", 0)
        return Text(f"{compact(images / busy)} img/s" if busy > 0 and images else "", style="cyan")


def seconds_left(task) -> float | None:
    """An attack's remaining time from its own seconds per image (known after its first unit)."""
    busy, images = task.fields.get("busy", 0.0), task.fields.get("timed", 0)
    return None if not images else max(0.0, task.total - task.completed) * busy / images


class TimeLeft(ProgressColumn):
    """ETA from the first finished unit on (rich's own needs two updates); the run's line is estimated
    by the reporter."""

    def render(self, task) -> Text:
        left = task.fields.get("eta") if "eta" in task.fields else seconds_left(task)
        if task.finished or left is None:
            return Text("" if task.finished else "-:--:--", style="progress.remaining")
        minutes, secs = divmod(int(left), 60)
        return Text(f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}", style="progress.remaining")


class RichReporter(Reporter):
    """One progress bar per model x eps x attack (one per model for its shifted conditions), advanced
    unit by unit and inside long units, under a line for the whole run with its estimated time left."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or TerminalConsole(stderr=True)
        self.progress: Progress | None = None
        self.tasks: dict[tuple, TaskID] = {}
        self.base: dict[tuple, float] = {}  # images finished per bar (partial progress is added on top)
        self.run_task = TaskID(-1)
        self.started, self.position = 0.0, (1, 1)

    def start(self, bars, model: str = "", position: tuple[int, int] = (1, 1)) -> None:
        """``bars`` of ``model``, the ``position[0]``-th of the run's ``position[1]`` models."""
        label = TextColumn(
            "{task.description}", markup=False, table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1)
        )
        columns = (label, BarColumn(bar_width=24), MofNCompleteColumn(), ImagesPerSecond(), TimeLeft())
        self.progress = Progress(*columns, console=self.console, transient=False, expand=True)
        self.progress.start()
        self.started, self.position = time.monotonic(), position
        title = f"{model}: model {position[0]} of {position[1]}"
        self.run_task = self.progress.add_task(
            title, total=sum(b.total for b in bars), completed=sum(b.done for b in bars), eta=None
        )
        self.tasks = {
            bar.key: self.progress.add_task(bar.label, total=bar.total, completed=bar.done, busy=0.0, timed=0)
            for bar in bars
        }
        self.base = {bar.key: float(bar.done) for bar in bars}

    def advance(self, key, images, seconds: float | None = None) -> None:
        """``images`` more done; ``seconds`` the time they took (None: done before, e.g. when resuming)."""
        progress = self.progress
        if progress is None or key not in self.tasks:
            return
        task_id = self.tasks[key]
        if seconds is not None:
            fields = progress.tasks[task_id].fields
            progress.update(task_id, busy=fields.get("busy", 0.0) + seconds, timed=fields.get("timed", 0) + images)
        self.base[key] += images
        progress.update(task_id, completed=self.base[key])
        progress.update(self.run_task, completed=sum(self.base.values()))
        self._update_run(progress)

    def partial(self, key, images: float) -> None:
        """Inside a unit: ``images``' worth of the unit in flight is done."""
        if self.progress is not None and key in self.tasks:
            self.progress.update(self.tasks[key], completed=self.base[key] + images)

    def _update_run(self, progress: Progress) -> None:
        """The run's time left: this model's bars by their own rates, the models after it as long as this one."""
        lefts = [seconds_left(task) for task in progress.tasks if task.id != self.run_task]
        known = [left for left in lefts if left is not None]
        if len(known) < len(lefts):
            return
        this_model = sum(known)
        model, models = self.position
        elapsed = time.monotonic() - self.started
        progress.update(self.run_task, eta=this_model + (models - model) * (elapsed + this_model))

    def note(self, text: str) -> None:
        self.console.print(text)

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


MODELS_AS_COLUMNS = 3  # more models than this: one row per model (a terminal cannot fit their names as columns)
PLAIN_BOLD = "*"  # a bold cell's mark where bold cannot show (a pipe, a file: rich writes no styles there)
PLAIN_BOLD_NOTE = (
    f"{PLAIN_BOLD} bold, which plain text cannot show: the column's best, separated from the runner-up by the claim "
    "test (the 95% interval of their difference, robeval compare's, excludes 0)"
)


class Plainly:
    """A renderable shown as ``styled`` where the console writes styles (a terminal) and as ``plain`` where
    it writes none (rich's colour system is None off a terminal: bold would vanish, so a mark stands for it)."""

    def __init__(self, styled: RenderableType, plain: RenderableType) -> None:
        self.styled, self.plain = styled, plain

    def chosen(self, console: Console) -> RenderableType:
        return self.plain if console.color_system is None else self.styled

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.chosen(console)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.chosen(console))


def to_rich(document: Document) -> list[RenderableType]:
    """The document for the terminal, one renderable per block: a grid under its caption's phrases, one a
    line (a phrase wider than the terminal wraps, never cut); a grid of (attack, Top-1 / Top-5) columns
    shows ``top-1 / top-5`` in one cell; a few models become the columns, their names uncut; a bold cell
    is bold (where bold cannot show, marked :data:`PLAIN_BOLD`, said under the table), a noted one marked."""
    return [RICH[type(block)](block) for block in drawn(document)]


def _captioned_grid(block: Grid) -> RenderableType:
    said = [Plainly(Group(), Text(PLAIN_BOLD_NOTE, overflow="fold"))] if block.bold else []  # the plain mark's line
    return Group(*[_text(part, style="bold", overflow="fold") for part in block.caption], _grid_table(block), *said)


def _rich_of_table(block: Table) -> RichTable:
    rows = [[_shown(v) for v in row] for row in block.rows]
    return _rich_table([str(h) for h in block.head], rows, left=frozenset(block.text_columns), title=block.title)


RICH: dict[type, Callable[[Any], RenderableType]] = {  # the terminal's way of showing each kind of block
    Grid: _captioned_grid,
    Table: _rich_of_table,
    Lines: lambda block: _text("\n".join(block.lines)),
    Heading: lambda block: _text(block.text, style="bold"),
    Paragraph: lambda block: _text(block.text, style="bold" if block.strong else ""),
}


def _text(value: object, **style: Any) -> Text:
    """A text as the terminal shows it: its hidden characters as escapes (robeval.report.escaping.terminal)."""
    return Text(terminal(value), **style)


def _shown(value: object, mark: str = "", plain: bool = False) -> Text:
    """A cell's text with its mark: bold, or where bold cannot show (``plain``) :data:`PLAIN_BOLD`."""
    shown = shown_number(value) if not isinstance(value, Measured) else value
    text = f"{shown}{MARKS.get(mark, '') if str(shown) else ''}{PLAIN_BOLD if plain and mark == BOLD else ''}"
    return _text(text, style="bold" if mark == BOLD and not plain else "")


def _cell(marked: list[tuple[object, str]]) -> RenderableType:
    """One cell of (value, mark) parts joined by `` / ``: bold parts bold, or marked where bold cannot show."""
    styled, plain = (Text(" / ").join(_shown(value, mark, off) for value, mark in marked) for off in (False, True))
    return styled if styled.plain == plain.plain else Plainly(styled, plain)


def _grid_table(block: Grid) -> RichTable:
    """The grid's rows (models) and columns, the two metrics of an attack in one cell; transposed when it
    has few models."""
    frame, both = block.frame, block.frame.columns.nlevels > 1
    group = (lambda c: c[0]) if both else (lambda c: c)  # an attack's Top-1 and Top-5 share a cell
    columns = list(dict.fromkeys(map(group, frame.columns)))
    rows = []
    for model, cells in marked_rows(block):
        marked = list(zip(frame.columns, cells))
        rows.append([_text(model), *(_cell([cell for c, cell in marked if group(c) == a]) for a in columns)])
    if len(rows) <= MODELS_AS_COLUMNS:
        head = ["attack" if both else "", *(str(r[0]) + ("\ntop-1 / top-5" if both else "") for r in rows)]
        return _rich_table(head, [[_text(c), *(r[i + 1] for r in rows)] for i, c in enumerate(columns)])
    return _rich_table([block.corner.lower(), *map(str, columns)], rows, "cells: top-1 / top-5" if both else None)


def _rich_table(
    head: list[str], rows: list[list], caption: str | None = None, left: frozenset[int] = frozenset(), title: str = ""
) -> RichTable:
    """A rich table under its ``title`` (if any): the first column the rows' names (bold, wrapped where long),
    the others right-aligned but the ``left`` ones (text)."""
    table = RichTable(title=title or None, caption=caption)
    table.add_column(head[0], style="bold")
    for i, column in enumerate(head[1:], start=1):
        table.add_column(column, justify="left" if i in left else "right")
    for row in rows:
        table.add_row(*row)
    return table


def _passes(value: float) -> str:
    """``12345.6`` -> ``12,346``; ``2.5`` -> ``2.5``; ``1.0`` -> ``1``."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}".removesuffix(".0")


def passes_lines(passes: dict[str, dict[str, dict[str, dict[str, float]]]]) -> list[str]:
    """The closing summary's cost of the run: one line per model and eps, forward / backward image passes
    per example for the clean pass and each attack, and their total (run.json's ``passes_per_image``)."""
    if not passes:
        return []
    lines = ["Model passes per image, forward / backward (the run's cost on any hardware; run.json passes_per_image):"]
    for model, by_eps in passes.items():
        for eps, by_attack in by_eps.items():
            parts = [f"{a} {_passes(p['forward'])}/{_passes(p['backward'])}" for a, p in by_attack.items()]
            total = [sum(p[k] for p in by_attack.values()) for k in ("forward", "backward")]
            lines.append(f"  {model} at {eps}: {', '.join(parts)}; total {_passes(total[0])}/{_passes(total[1])}")
    return lines

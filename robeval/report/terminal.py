"""Rich output: progress bars while a run works, and the results table when it is done."""

from __future__ import annotations

import pandas as pd
from rich.console import Console, Group
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from .tables import caption_parts, pivot


class ImagesPerSecond(ProgressColumn):
    """Images per second of the attack's own work (the seconds its units took), not of the wall clock:
    the units of all attacks interleave batch by batch, so a wall-clock rate would mix them."""

    def render(self, task) -> Text:
        busy, images = task.fields.get("busy", 0.0), task.fields.get("timed", 0)
        return Text(f"{images / busy:,.1f} img/s" if busy > 0 and images else "", style="cyan")


class RichReporter:
    """One progress bar per model x eps x attack, advanced batch by batch."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.progress: Progress | None = None
        self.tasks: dict[tuple[str, str, str], int] = {}

    def start(self, tasks, batches, examples) -> None:
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), ImagesPerSecond(),
                                 TimeRemainingColumn(), console=self.console, transient=False)
        self.progress.start()
        width = max(len(f"{m} eps={e} {a}") for m, e, a in tasks) if tasks else 10
        self.tasks = {(m, e, a): self.progress.add_task(f"{m} eps={e} {a}".ljust(width), total=examples, busy=0.0, timed=0)
                      for m, e, a in tasks}

    def advance(self, model, eps, attack, images, seconds: float | None = None) -> None:
        """``images`` more done; ``seconds`` the time they took (None: done before, e.g. when resuming)."""
        if self.progress is None:
            return
        task_id = self.tasks[(model, eps, attack)]
        if seconds is not None:
            fields = self.progress.tasks[task_id].fields
            self.progress.update(task_id, busy=fields.get("busy", 0.0) + seconds, timed=fields.get("timed", 0) + images)
        self.progress.advance(task_id, images)

    def note(self, text: str) -> None:
        self.console.print(text)

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


def results_tables(summary: pd.DataFrame) -> list[Group]:
    """One table per eps with attacks as rows and models as columns (narrow enough for a terminal),
    under its caption, one phrase per line (a terminal never breaks a phrase in two)."""
    from .minimum_norm import minimum_norm_block
    from .shift_table import DETAIL_CAPTION, corruption_grid, shift_caption, shift_grid, split

    full, (summary, shifted) = summary, split(summary)
    tables = []
    for eps in dict.fromkeys(summary["eps"]):
        grid = pivot(summary, eps).T  # attacks x models
        table = Table()
        table.add_column("attack", style="bold")
        for model in grid.columns:
            table.add_column(f"{model}\ntop-1 / top-5", justify="right")
        for attack, row in grid.iterrows():
            table.add_row(str(attack), *[str(v) for v in row.tolist()])
        lines = [Text(part, style="bold", no_wrap=True, overflow="fold") for part in caption_parts(summary, eps)]
        tables.append(Group(*lines, table))
    block = minimum_norm_block(summary, _transposed)
    if block is not None:
        tables.append(block)
    if shifted:
        for grid, text in ((shift_grid(full), shift_caption(full)),
                           (corruption_grid(full), DETAIL_CAPTION)):
            if grid is not None:
                tables.append(_transposed(grid, text))
    return tables


def _transposed(grid: pd.DataFrame, text: str) -> Group:
    """A models-as-columns table of ``grid`` (rows = models) under its caption, one phrase per line."""
    table = Table()
    table.add_column("", style="bold")
    for model in grid.index:
        table.add_column(str(model), justify="right")
    for column in grid.columns:
        table.add_row(str(column), *[str(v) for v in grid[column].tolist()])
    return Group(*[Text(part, style="bold", no_wrap=True, overflow="fold") for part in text.split("; ")], table)

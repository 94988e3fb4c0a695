"""Rich output: progress bars while a run works, and the results table when it is done."""

from __future__ import annotations

import pandas as pd
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from .tables import caption, pivot


class ImagesPerSecond(ProgressColumn):
    def render(self, task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:,.1f} img/s" if speed else "-- img/s", style="cyan")


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
        self.tasks = {(m, e, a): self.progress.add_task(f"{m} eps={e} {a}".ljust(width), total=examples)
                      for m, e, a in tasks}

    def advance(self, model, eps, attack, images) -> None:
        if self.progress is not None:
            self.progress.advance(self.tasks[(model, eps, attack)], images)

    def note(self, text: str) -> None:
        self.console.print(text)

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


def results_tables(summary: pd.DataFrame) -> list[Table]:
    """One table per eps with attacks as rows and models as columns (narrow enough for a terminal)."""
    tables = []
    for eps in dict.fromkeys(summary["eps"]):
        grid = pivot(summary, eps).T  # attacks x models
        table = Table(title=caption(summary, eps), title_justify="left")
        table.add_column("attack", style="bold")
        for model in grid.columns:
            table.add_column(f"{model}\ntop-1 / top-5", justify="right")
        for attack, row in grid.iterrows():
            table.add_row(str(attack), *[str(v) for v in row.tolist()])
        tables.append(table)
    return tables

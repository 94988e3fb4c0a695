"""What a reproduction was asked for (resolved), what it made, and the writing of its table files."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.atomic_files import atomic_write
from ..report.files import prepare_out_dir
from ..report.formats import FORMATS
from . import render
from .tables import PaperTable


@dataclass
class Reproduction:
    table: PaperTable
    caption: list[str]  # the caption's phrases
    grid: Any  # pandas DataFrame in the table's layout
    files: dict[str, Path]
    result: Any = None  # the Run of a one-run table (robeval.results_api.Run)
    results: dict[str, Any] | None = None  # column key -> the Run of each column's run

    @property
    def text(self) -> str:
        """The caption as one line (its phrases joined), as the Markdown file shows it."""
        return "; ".join(self.caption)


@dataclass
class Request:
    """What one reproduction was asked for, resolved: the table, its version, the checkpoints by model."""

    table: PaperTable
    digits: bool
    evaluate: Callable[..., Any]
    out: str | None
    checkpoints: dict[str, list[str]]  # each model's members
    protocol: str | None
    eps: str | None
    data: str
    data_for: dict[str, str]
    options: dict[str, Any]


def write(rep: Reproduction, folder: str | None) -> Reproduction:
    """``table.md``, ``table.csv`` and ``table.tex`` in ``folder`` (nothing when None)."""
    if folder is not None:
        where = prepare_out_dir(Path(folder))
        for written in (FORMATS["md"], FORMATS["csv"], FORMATS["latex"]):
            rep.files[written.suffix] = where / f"table.{written.suffix}"
            atomic_write(rep.files[written.suffix], written.render(render.document(rep.grid, rep.caption)))
    return rep

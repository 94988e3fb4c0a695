"""Printing what is said under every results table (robeval.report.checklist makes the lines)."""

from __future__ import annotations

from .app import console


def print_lines(lines: list[str]) -> None:
    """Lines as they are: no markup, no wrapping (a piped output is the library's text)."""
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def print_diagnostics(run: dict, summary) -> None:
    """Skipped files, stopped models, soundness flags and adaptive gaps: printed under every table."""
    from ..report.checklist import diagnostic_lines

    print_lines(diagnostic_lines(run, summary))

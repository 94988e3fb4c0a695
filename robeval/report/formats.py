"""The one registry of output formats: each format's renderer of a document (robeval.report.document) and
what a command needs to know of it.  A command offers the part it allows (:func:`offered`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..core.errors import lookup
from . import robustbench
from .document import Document, to_csv, to_html, to_json, to_latex, to_markdown, values_of


@dataclass(frozen=True)
class Format:
    """``render``, its files' ``suffix``; whether it writes a document's ``values`` (no bold, no caption)
    rather than drawing its blocks; a ``fixed_layout`` (a table's options do not apply); a ``note`` for stderr."""

    render: Callable[[Document], str]
    suffix: str
    values: bool = False
    fixed_layout: bool = False
    note: str = ""


FORMATS: dict[str, Format] = {
    "md": Format(to_markdown, "md"),
    "latex": Format(to_latex, "tex"),
    "html": Format(to_html, "html"),
    "csv": Format(to_csv, "csv", values=True),
    "json": Format(to_json, "json", values=True),
    "robustbench": Format(lambda d: robustbench.to_model_info(values_of(d)), "json", True, True, robustbench.NOTE),
}


def offered(name: str, allowed: Sequence[str], what: str = "format") -> Format:
    """Format ``name`` where a command allows it (``allowed``, in the order its one-line refusal lists them)."""
    return lookup({format: FORMATS[format] for format in allowed}, name, what)

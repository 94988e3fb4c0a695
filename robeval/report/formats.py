"""The one registry of output formats (:data:`FORMATS`): each format's renderer of a document
(robeval.report.document), and the facts a command needs of it.  What a command offers is the part of
it the command allows (:func:`offered`): ``table`` all of them, ``compare`` md, csv and json, ``profile``
md and csv; ``reproduce`` writes md, csv and latex files.  The terminal's renderer, whose output is rich's
renderables rather than text, is robeval.report.terminal.to_rich."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..core.errors import lookup
from ..core.registry import Registry
from . import robustbench
from .document import Document, to_csv, to_html, to_json, to_latex, to_markdown, values_of


@dataclass(frozen=True)
class Format:
    """An output format: its renderer, the suffix of a file in it, whether it writes a document's values
    (its :class:`~robeval.report.document.Values`: a summary as it is, no bold, no caption) rather than what
    the document draws, whether its layout is fixed (a table's --top1-only, --attacks, --name and --no-bold
    do not apply), and what its reader must know (said on stderr, not in the file)."""

    render: Callable[[Document], str]
    suffix: str
    values: bool = False
    fixed_layout: bool = False
    note: str = ""


FORMATS: Registry[Format] = Registry("format")
FORMATS.add("md", Format(to_markdown, "md"))
FORMATS.add("latex", Format(to_latex, "tex"))
FORMATS.add("html", Format(to_html, "html"))
FORMATS.add("csv", Format(to_csv, "csv", values=True))
FORMATS.add("json", Format(to_json, "json", values=True))
FORMATS.add(
    "robustbench",
    Format(lambda document: robustbench.to_model_info(values_of(document)), "json", True, True, robustbench.NOTE),
)


def offered(name: str, allowed: Sequence[str], what: str = "format") -> Format:
    """Format ``name`` where a command allows it (``allowed``, in the order its one-line refusal lists them)."""
    return lookup({format: FORMATS[format] for format in allowed}, name, what)

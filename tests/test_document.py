"""The one document model (robeval.report.document): every block type, with text that holds each format's
markup, renders as that text in Markdown (read back by a CommonMark parser), HTML, LaTeX (typeset by
pdflatex), CSV (read back by the csv module) and the terminal (rich)."""

from __future__ import annotations

import csv
import html
import io
import re

import pandas as pd
from rich.console import Console

from robeval.report.document import (
    Formula,
    Grid,
    Heading,
    Lines,
    Paragraph,
    Table,
    Values,
    to_csv,
    to_html,
    to_latex,
    to_markdown,
)
from robeval.report.formats import FORMATS
from robeval.report.grid import Measured, Status, Strong
from robeval.report.terminal import to_rich

from .conftest import typeset

NAME = "a|b <script>x</script> *c* [d](e) $f$"
DOCUMENT = [
    Heading(f"about {NAME}", 1),
    Paragraph(f"- {NAME}"),
    Paragraph(f"verdict {NAME}", strong=True, css="verdict"),
    Table(
        ["model", "status", "top-1"],
        [[NAME, Status("RAISED"), Measured(97.8, 0.4)], ["b", Status("ok"), Strong("1")]],
        "llr",
        text_columns=(0, 1),
    ),  # fmt: skip
    Lines([f"line one {NAME}", "line two"]),
]
COLUMNS = pd.MultiIndex.from_tuples([("Clean", "Top-1"), ("Clean", "Top-5"), ("PGD", "Top-1"), ("PGD", "Top-5")])
GRID = Grid(
    pd.DataFrame([[Measured(97.8, 0.4), "99.00", "=1+1", "50.00"], ["90.00", "98.00", "40.00", "45.00"]],
                 index=[NAME, "b"], columns=COLUMNS),  # fmt: skip
    [Formula("under attack, eps = 8/255", r"under attack, $\epsilon = 8/255$"), f"data: {NAME}", "cells: mean ± std"],
    bold=frozenset({(NAME, ("PGD", "Top-5"))}),
    noted=frozenset({("b", ("Clean", "Top-1"))}),
)


def test_markdown_shows_every_text_and_makes_only_the_documents_own_structure():
    from markdown_it import MarkdownIt

    page = MarkdownIt("commonmark").enable("table").render(to_markdown(DOCUMENT))
    assert page.count("<h1>") == 1 and page.count("<tr>") == 3 and page.count("<strong>") == 2
    assert not re.search(r"<(script|a |em>|ul>|li>)", page)  # no element a text made (a list item included)
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert text.count(NAME) == 5 and "97.80 ± 0.40" in text


def test_html_escapes_every_text_and_marks_statuses_for_the_style():
    page = to_html(DOCUMENT)
    assert "<script>" not in page and page.count(html.escape(NAME, quote=True)) == 5
    assert '<td class="text status-RAISED">RAISED</td>' in page and '<p class="verdict"><strong>' in page


def test_the_drawing_formats_draw_every_block_and_the_data_formats_write_the_values():
    values = Values(pd.DataFrame({"model": [NAME], "top1": [float("nan")], "min_norm": [float("inf")]}))
    for name in ("md", "html", "latex"):
        shown = FORMATS[name].render([*DOCUMENT, GRID, values])
        assert "45.00" in shown and "97.80" in shown and "line two" in shown and "min_norm" not in shown, name
    tables = FORMATS["csv"].render([*DOCUMENT, GRID])  # no values: the tables and grids
    assert "45.00" in tables and "97.80" in tables and "line two" not in tables
    assert FORMATS["csv"].render([*DOCUMENT, GRID, values]) == f"model,top1,min_norm\n{NAME},,inf\n"
    rows = f'[\n  {{\n    "model": "{NAME}",\n    "top1": null,\n    "min_norm": "inf"\n  }}\n]\n'
    assert FORMATS["json"].render([*DOCUMENT, GRID, values]) == rows  # standard JSON: no NaN, no Infinity


def test_a_grid_in_markdown_bolds_and_marks_its_cells_and_escapes_its_caption():
    from markdown_it import MarkdownIt

    page = MarkdownIt("commonmark").enable("table").render(to_markdown([GRID]))
    assert page.count("<tr>") == 3 and "<strong>50.00</strong>" in page and "90.00†" in page
    assert "<script>" not in page and html.unescape(re.sub(r"<[^>]+>", "", page)).count(NAME) == 2


def test_latex_typesets_every_text_as_its_characters_and_the_formula_as_math(tmp_path):
    tex = to_latex([*DOCUMENT, GRID])
    assert r"$\epsilon = 8/255$" in tex and r"mean $\pm$ std" in tex and r"\textbf{50.00}" in tex
    assert " \\\\\nline two" in tex  # lines end in LaTeX's line break
    assert "90.00$^\\dagger$" in tex and r"\textless{}script\textgreater{}" in tex and "$f$" not in tex
    typeset(tex, tmp_path)


def test_csv_holds_the_tables_cells_as_they_are_and_no_formula():
    tables = to_csv([*DOCUMENT, GRID]).split("\n\n")
    assert len(tables) == 2
    grid = list(csv.reader(io.StringIO(tables[1])))
    assert grid[0] == ["", "Clean Top-1", "Clean Top-5", "PGD Top-1", "PGD Top-5"]
    assert grid[1] == [NAME, "97.80 ± 0.40", "99.00", "'=1+1", "50.00"]


def test_the_terminal_shows_every_text_as_it_is_and_the_grids_two_metrics_in_one_cell():
    console = Console(width=200, record=True)
    for block in to_rich([*DOCUMENT, GRID]):
        console.print(block)
    text = console.export_text()
    assert text.count(NAME) >= 5 and "97.80 ± 0.40 / 99.00" in text and "90.00† / 98.00" in text
    assert "under attack, eps = 8/255" in text and "top-1 / top-5" in text


def test_the_terminal_gives_each_column_of_a_one_level_grid_its_own_cell():
    grid = Grid(pd.DataFrame([["1.25", "2.50"]], index=["m"], columns=["median size", "Top-1"]), ["caption"])
    console = Console(width=100, record=True)
    for block in to_rich([grid]):
        console.print(block)
    lines = console.export_text().splitlines()
    assert any("median size" in line and "1.25" in line for line in lines)
    assert any("Top-1" in line and "2.50" in line for line in lines) and "1.25 / 2.50" not in "".join(lines)

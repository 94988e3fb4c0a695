"""The one document model (robeval.report.document): every block type, with text that holds each format's
markup, renders as that text in Markdown (read back by a CommonMark parser) and in HTML."""

from __future__ import annotations

import html
import re

from robeval.report.document import Heading, Lines, Paragraph, Status, Table, to_html, to_markdown
from robeval.report.grid import Measured, Strong

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

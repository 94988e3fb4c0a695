"""A bold cell keeps a mark off a terminal: where rich writes no styles (output piped or saved, ``robeval run >
log``) bold would vanish while the † survives, so a bold cell carries ``*`` there, explained once under its
table; on a terminal bold stays bold and nothing is added."""

from __future__ import annotations

import io
import re

import pandas as pd
from rich.console import Console

from robeval.report.document import Grid
from robeval.report.terminal import PLAIN_BOLD_NOTE, to_rich

from .conftest import invoke

COLUMNS = pd.MultiIndex.from_tuples([("Clean", "Top-1"), ("Clean", "Top-5"), ("PGD", "Top-1"), ("PGD", "Top-5")])
GRID = Grid(
    pd.DataFrame([["97.80", "99.00", "60.00", "80.00"], ["90.00", "98.00", "40.00", "45.00"]], index=["a", "b"],
                 columns=COLUMNS),  # fmt: skip
    ["under attack, eps = 8/255"],
    bold=frozenset({("a", ("PGD", "Top-1")), ("a", ("PGD", "Top-5"))}),
    noted=frozenset({("b", ("Clean", "Top-1"))}),
)
BLIND = """
from torch import nn

import robeval


def blind():
    '''Every logit 0: the first class for every image, about chance on the digits.'''
    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))
    nn.init.zeros_(net[1].weight), nn.init.zeros_(net[1].bias)
    return net, robeval.ModelConfig(input_size=(1, 8, 8))
"""


def printed(blocks: list, **console: object) -> str:
    out = io.StringIO()
    shown = Console(file=out, width=120, **console)  # type: ignore[arg-type]
    for block in blocks:
        shown.print(block)
    return out.getvalue()


def test_off_a_terminal_a_bold_cell_is_marked_and_the_mark_said_once_under_its_table():
    text = printed(to_rich([GRID]))  # a file, not a terminal: no styles
    assert "\x1b[" not in text and "60.00* / 80.00*" in text and "90.00† / 98.00" in text
    assert text.count("*") == 3 and text.rstrip().endswith(PLAIN_BOLD_NOTE.split()[-1])
    lines = text.splitlines()
    assert lines.index(next(line for line in lines if line.startswith("* bold"))) > max(
        i for i, line in enumerate(lines) if "60.00*" in line
    )  # under the table


def test_on_a_terminal_bold_stays_bold_and_nothing_is_added():
    text = printed(to_rich([GRID]), force_terminal=True, color_system="truecolor")
    assert "\x1b[1m60.00\x1b[0m" in text and "\x1b[1m80.00\x1b[0m" in text and "*" not in text
    assert "90.00† / 98.00" in text  # the footnote mark is text either way
    unmarked = Grid(GRID.frame, GRID.caption, noted=GRID.noted)
    assert "*" not in printed(to_rich([unmarked]))  # no bold cell: no mark, no line


def test_robeval_run_saved_to_a_file_marks_its_bold_cells(tmp_path):
    """``robeval run`` as a captured (not a terminal) output: a model at chance beside digits-deit, so the claim
    test separates digits-deit's clean top-1 and bolds it."""
    (tmp_path / "code.py").write_text(BLIND)
    result = invoke(["run", "-m", "digits-deit", "-m", "./code.py:blind=blind", "-n", "20", "--attacks", "fgsm",
                     "--store", "s.sqlite", "--out", "o"], tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "\x1b[" not in result.stdout and PLAIN_BOLD_NOTE.split(":")[0] in result.stdout
    clean = next(line for line in result.stdout.splitlines() if line.startswith("│ Clean"))
    assert re.search(r"[0-9.]+\* / [0-9.]+", clean), clean  # digits-deit's cell (the blind one is no best)
    assert result.stdout.count("* bold, which plain text cannot show") == 1
    assert "**" in (tmp_path / "o" / "results.md").read_text()  # Markdown keeps its own bold

"""Text and files from outside do nothing but show (docs/hardening.md, rule 9): a store someone hands
over, with names that hold every format's markup, read by every command that reads one.

One test per class: a store never chooses code; its names inject no script into the report (opened in
Chromium), no formula into a CSV, no row, column or markup into Markdown, nothing into LaTeX, no markup
or control into the terminal; a name that holds a control character is refused.
"""

from __future__ import annotations

import csv
import io
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import FAST_SETTINGS, invoke, one_line_error, require_tool, typeset
from .hostile import (
    CHROMIUM,
    HOSTILE_MODEL,
    HOSTILE_OTHER,
    HOSTILE_RUN,
    hostile_store,
    open_in_chromium,
    rewrite_names,
)

NAMES = (HOSTILE_MODEL, HOSTILE_OTHER)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    return hostile_store(tmp_path_factory.mktemp("hostile"))


def read(args: list[str], store: Path, folder: Path) -> str:
    result = invoke([*args, "--store", str(store)], folder)
    assert result.returncode == 0, (args, result.stderr)
    return result.stdout


def both_sides() -> list[str]:
    return [f"{HOSTILE_RUN}:{HOSTILE_MODEL}", f"{HOSTILE_RUN}:{HOSTILE_OTHER}"]


# -- Markdown ----------------------------------------------------------------------------------------


def rendered(markdown: str) -> str:
    """The HTML a CommonMark renderer with GitHub's tables makes of ``markdown``."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").enable("strikethrough").render(markdown)


def table_rows(page: str) -> list[list[str]]:
    """Each table row of rendered Markdown as the text of its cells."""
    import html

    rows = re.findall(r"<tr>(.*?)</tr>", page, re.S)
    return [[html.unescape(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)] for row in rows]


def test_markdown_shows_every_name_as_text_and_no_name_adds_a_row_a_column_or_markup(hostile, tmp_path):
    documents = {
        "table": read(["table", "-f", "md"], hostile, tmp_path),
        "compare": read(["compare", *both_sides()], hostile, tmp_path),
        "check": read(["check"], hostile, tmp_path),
    }
    read(["check", "--report", "checklist.md"], hostile, tmp_path)
    documents["checklist"] = (tmp_path / "checklist.md").read_text()
    for name, text in documents.items():
        page = rendered(text)
        # no element the names could make: no script, image, link, emphasis, code or math
        assert not re.search(r"<(script|img|a |em>|code>|del>|s>|b>)", page), (name, page[:3000])
        for row in table_rows(page):
            assert len(row) == len(table_rows(page)[0]), (name, row)  # a bar in a name adds no column
            assert not any(cell.startswith("forged") for cell in row)
        shown = re.sub(r"<[^>]+>", "", page)  # the text a reader sees
        import html

        assert all(n in html.unescape(shown) for n in NAMES if name != "check" or n == NAMES[0]), name
    model_rows = [r for r in table_rows(rendered(documents["table"])) if r[0] in NAMES]
    assert [r[0] for r in model_rows] == list(NAMES)  # one row per model, each named exactly


def test_results_md_shows_a_data_folders_file_names_as_text(tmp_path):
    import numpy as np
    from PIL import Image

    root = tmp_path / "imgs"
    for name in ("a", "b"):
        (root / name).mkdir(parents=True)
        for i in range(2):
            Image.fromarray(np.full((16, 16), 60 * i + 40, dtype=np.uint8)).save(root / name / f"{i}.png")
    (root / "a" / "x<script>y| *z* [l](u).png").write_text("not an image")
    (tmp_path / "classes.txt").write_text("a 0\nb 3\n")
    result = invoke(["run", "-m", "digits-deit", "--data", str(root), "--class-map", str(tmp_path / "classes.txt"),
                     "--attacks", "fgsm", "--quiet", "--out", "out"], tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    page = rendered((tmp_path / "out" / "results.md").read_text())
    assert "<script" not in page and "<em>" not in page and "<a " not in page
    assert "x&lt;script&gt;y| *z* [l](u).png" in page


# -- CSV -------------------------------------------------------------------------------------------------


def cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


FORMULA = ("=", "+", "-", "@", "\t", "\r")


def test_csv_cells_never_start_a_formula_and_numbers_stay_numbers(hostile, tmp_path):
    from robeval.report.escaping import csv_cell

    tables = {
        "table": read(["table", "-f", "csv"], hostile, tmp_path),
        "compare": read(["compare", *both_sides(), "-f", "csv"], hostile, tmp_path),
    }
    for name, text in tables.items():
        rows = cells(text)
        for row in rows:
            for cell in row:
                if cell.startswith(FORMULA):  # only a plain number may start so
                    float(cell)
        assert any(c == "'" + HOSTILE_MODEL for row in rows for c in row) or name == "compare", name
    table = cells(tables["table"])
    head = table[0]
    for row in table[1:]:
        float(row[head.index("top1")])  # a number column stays a number
    assert {row[head.index("model")] for row in table[1:]} == {"'" + HOSTILE_MODEL, "'" + HOSTILE_OTHER}
    assert [csv_cell(v) for v in ("-0.5", "+3", "1e-3", "@x", "-x", "=1+1", 2.5, "a=b")] == [
        "-0.5", "+3", "1e-3", "'@x", "'-x", "'=1+1", 2.5, "a=b"]  # fmt: skip


# -- LaTeX -----------------------------------------------------------------------------------------------


def test_latex_typesets_every_name_as_its_characters(hostile, tmp_path):
    from robeval.report.escaping import latex

    assert latex("a\\b") == r"a\textbackslash{}b" and latex("{x}^_") == r"\{x\}\textasciicircum{}\_"
    tex = read(["table", "-f", "latex"], hostile, tmp_path)
    assert latex(HOSTILE_MODEL) in tex and latex(HOSTILE_OTHER) in tex
    assert HOSTILE_MODEL not in tex and "\\textbf{x}" not in tex.replace("\\textbackslash{}textbf", "")
    typeset(tex, tmp_path)
    if shutil.which("pdftotext"):
        words = subprocess.run(["pdftotext", "doc.pdf", "-"], cwd=tmp_path, capture_output=True, text=True).stdout
        assert "a\\b" in words and "{y}" in words and "[bold]z[/]" in words


# -- HTML ------------------------------------------------------------------------------------------------


def test_the_report_of_a_hostile_store_runs_no_script_in_chromium(hostile, tmp_path):
    written = invoke(["report", "--store", str(hostile), "--out", "report.html", "--gallery-size", "0"], tmp_path)
    assert written.returncode == 0, written.stderr
    page = (tmp_path / "report.html").read_text()
    assert "<script>document" not in page and "<img src=x" not in page and "<svg onload" not in page
    policy = re.search(r'Content-Security-Policy" content="([^"]*)"', page).group(1)
    assert "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]  # only the page's own script, by hash
    require_tool(CHROMIUM, "Chromium", "apt-get install chromium; .ci/run installs it")
    seen = open_in_chromium(tmp_path / "report.html", tmp_path)
    assert seen["errors"] == [] and seen["foreign"] == [], (seen["errors"], seen["foreign"])
    assert seen["scripts"] == 2 and seen["title"].startswith("robeval report")  # no script ran, none was added
    for name in (*NAMES, HOSTILE_RUN):
        assert name in seen["text"]  # every name shown, as the characters it is


# -- the terminal and control characters -----------------------------------------------------------------


def test_the_terminal_shows_rich_markup_as_text(hostile, tmp_path):
    listed = read(["runs"], hostile, tmp_path)
    assert "[bold]z[/]" in " ".join(listed.split())  # rich's markup shown, not read (rows wrap)
    renamed = invoke(["table", "--name", f"{HOSTILE_OTHER}=a\x1b[2Jb", "--store", str(hostile)], tmp_path)
    assert one_line_error(renamed, "--name", "control character"), renamed.stderr


@pytest.mark.parametrize("control", ["\n", "\x1b[2J", "\u202e", "\r"])
def test_a_name_with_a_control_character_is_refused_by_every_reader(tmp_path, control):
    import robeval

    store = tmp_path / "s.sqlite"
    robeval.evaluate_full(models=["digits-deit"], n_examples=4, attacks="fgsm", store=str(store), progress=False)
    rewrite_names(store, {"digits-deit": f"digits{control}forged | row"}, "a-run", "digits")
    before = store.read_bytes()
    for args in (["runs"], ["table"], ["table", "-f", "csv"], ["check"], ["report", "--out", "r.html"],
                 ["compare", "a-run:x", "a-run:y"], ["plot", "--out", "plots"]):  # fmt: skip
        result = invoke([*args, "--store", str(store)], tmp_path)
        assert one_line_error(result, "control character"), (args, result.stderr)
    assert store.read_bytes() == before and not (tmp_path / "r.html").exists()


def test_a_label_with_a_control_character_is_refused_before_any_work(tmp_path):
    (tmp_path / "mine.py").write_text("import robeval\n\ndef build():\n    return robeval.load_model('digits-deit')\n")
    result = invoke(["run", "-m", "./mine.py:build=a\u202eb", "-n", "4", "--attacks", "fgsm"], tmp_path)
    assert one_line_error(result, "control character") and not (tmp_path / "results").exists()


# -- code ------------------------------------------------------------------------------------------------

MODULE = """open({sentinel!r}, "w").write("imported")


def build():
    open({sentinel!r}, "w").write("called")
"""


def test_a_store_that_names_an_installed_modules_function_never_imports_or_calls_it(tmp_path, monkeypatch):
    """Any importable function, named by a store with its path and hash as they are on this machine."""
    from robeval.models.user_code import code_record

    site = tmp_path / "site"
    site.mkdir()
    sentinel = tmp_path / "ran"
    (site / "handy_lib.py").write_text(MODULE.format(sentinel=str(sentinel)))
    monkeypatch.syspath_prepend(str(site))
    import robeval

    store = tmp_path / "s.sqlite"
    robeval.evaluate_full(models=["digits-deit"], n_examples=4, attacks="fgsm", settings=FAST_SETTINGS,
                          store=str(store), progress=False)  # fmt: skip
    db = sqlite3.connect(store)
    config, info = db.execute("SELECT config, info FROM runs").fetchone()
    import json

    config, info = json.loads(config), json.loads(info)
    config["references"] = {"digits-deit": "handy_lib:build"}
    info["models"]["digits-deit"]["code"] = code_record("handy_lib:build")  # exactly what the file is
    db.execute("UPDATE runs SET config = ?, info = ?", (json.dumps(config), json.dumps(info)))
    db.commit()
    db.close()
    run_id = robeval.open_run(store=store).run_id
    refused = [["examples", run_id, "--attack", "fgsm"], ["check", run_id, "--report", "c.md", "--run-missing"]]
    for args in refused:
        result = invoke([*args, "--store", str(store)], tmp_path)
        assert one_line_error(result, "handy_lib:build", "never imports"), (args, result.stderr)
    written = invoke(["report", "--store", str(store), "--out", "r.html"], tmp_path)
    assert (
        written.returncode == 0
        and "no gallery: model digits-deit of the run is built by the code handy_lib"
        in (tmp_path / "r.html").read_text()
    )
    assert not sentinel.exists() and "handy_lib" not in sys.modules

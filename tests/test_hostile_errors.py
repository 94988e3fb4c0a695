"""Errors by class (issue 52, item 8; docs/hardening.md): each class of input a user (or a store from
someone else) can get wrong answers in one ``error:`` line with exit code 2, no traceback, and leaves
every file it did not create as it was.  The classes: text that is no number given where one is read; a
store that can be read but not written given to a writer; text from outside shown in a figure; a read
command on a store with no run to read; a comparison of a thing with itself."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import matplotlib
import pytest

import robeval
from robeval.core.errors import UserError
from robeval.report import plots, style
from robeval.report.gallery import gallery
from robeval.report.plots import convergence_figure
from robeval.results.runs import convergence_curves, minimal_norms
from robeval.store import Store
from tests.conftest import FAST_SETTINGS, invoke, one_line_error

CODE = """
from torch import nn

import robeval


def build():
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 10)), robeval.ModelConfig(input_size=(1, 8, 8))
"""


def digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with the SHA-256 of its bytes (folders as "-")."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "-"
        for p in sorted(folder.rglob("*"))
    }


@pytest.fixture(scope="module")
def place(tmp_path_factory) -> tuple[Path, str]:
    """A folder with a model file and a store holding one finished run (its id)."""
    folder = tmp_path_factory.mktemp("hostile")
    (folder / "code.py").write_text(CODE)
    run = robeval.evaluate_full(models=["digits-deit"], n_examples=8, attacks="fgsm", store=folder / "s.sqlite")
    return folder, str(run.run_id)


# -- text that is no number, where a number is read --------------------------------------------------

# Each is refused by every option below: digits of other scripts (which str.isdigit or int accept), empty
# text and an empty part, a number too long for int(), a negative one and a descending range, hexadecimal,
# one beyond any float, not a number, a range without its end, Python's digit separator (int("1_0") is 10).
NOT_NUMBERS = ["²", "٣", "", " ", "1,,2", "9" * 5000, "-3", "5-2", "0x10", "1e400", "nan", "3-", "1_0"]
OTHER_DIGITS = [str.maketrans("0123456789", digits) for digits in ("٠١٢٣٤٥٦٧٨٩", "⁰¹²³⁴⁵⁶⁷⁸⁹", "０１２３４５６７８９")]


def near_misses(valid: str) -> list[str]:
    """A valid value written wrongly: in another script's digits, with an empty part."""
    return [valid.translate(digits) for digits in OTHER_DIGITS] + [f"{valid},", f"{valid},,{valid}"]


RUN = ["run", "-n", "8", "--store", "new.sqlite", "-q"]
EXAMPLES_OUT = ["--store", "s.sqlite", "--out", "new.png"]
NUMBER_OPTIONS = {  # option -> (its command line with the value, a valid value)
    "train-demo --seeds": (lambda v: ["train-demo", "-m", "digits-deit", "--out", "new.pth", "--seeds", v], "0-2"),
    "run --eps": (lambda v: [*RUN, "--attacks", "fgsm", "--eps", v], "1/255"),
    "run --severities": (lambda v: [*RUN, "--shift", "corruptions", "--severities", v], "1,2"),
    "run --set (a whole number)": (lambda v: [*RUN, "--attacks", "pgd", "--set", f"pgd.steps={v}"], "3"),
    "run --set (a decimal)": (lambda v: [*RUN, "--attacks", "pgd", "--set", f"pgd.rel_stepsize={v}"], "0.5"),
    "run --model-config": (lambda v: [*RUN, "-m", "./code.py:build", "--model-config", f"input_size={v}"], "1,8,8"),
    "run --n-examples": (lambda v: [*RUN, "--attacks", "fgsm", "--n-examples", v], "8"),
    "run --seed": (lambda v: [*RUN, "--attacks", "fgsm", "--seed", v], "1"),
    "run --threads": (lambda v: [*RUN, "--attacks", "fgsm", "--threads", v], "1"),
    "examples --examples": (lambda v: ["examples", "{run}", "-a", "fgsm", "--examples", v, *EXAMPLES_OUT], "{e}"),
    "examples --max": (lambda v: ["examples", "{run}", "-a", "fgsm", "--max", v, *EXAMPLES_OUT], "2"),
    "report --gallery-size": (lambda v: ["report", "--store", "s.sqlite", "--out", "new.html", "--gallery-size", v], "0"),
    "train-demo --epochs": (lambda v: ["train-demo", "-m", "digits-deit", "--out", "new.pth", "--epochs", v], "3"),
}


@pytest.mark.parametrize("option", NUMBER_OPTIONS)
def test_text_that_is_no_number_is_refused_in_one_line_by_every_option_that_reads_numbers(place, option):
    folder, run_id = place
    command, valid = NUMBER_OPTIONS[option]
    example = str(robeval.open_run(run_id, folder / "s.sqlite").records["example"].iloc[-1])
    before, wrong = digest(folder), {}
    for text in NOT_NUMBERS + near_misses(valid.replace("{e}", example)):
        result = invoke([a.replace("{run}", run_id) for a in command(text)], folder)
        if not one_line_error(result):
            wrong[text[:12]] = (result.returncode, result.stderr[-300:])
        assert digest(folder) == before, text[:12]  # nothing written, nothing created
    assert not wrong, wrong


# -- a store that can be read but not written, given to a writer -------------------------------------


def _immutable(path: Path, on: bool) -> bool:
    """``chattr +i`` (``on``) or ``-i``: a folder no one may add a file to, root included; whether it took."""
    return subprocess.run(["chattr", "+i" if on else "-i", str(path)], capture_output=True).returncode == 0


@pytest.fixture(params=["read-only file", "read-only folder"])
def unwritable_store(request, place, tmp_path) -> Iterator[Path]:
    """A copy of the place's store that can be read but not written: its file marked read-only (robeval
    refuses that for root too), or its folder closed to new files (where SQLite makes -wal and -shm):
    immutable when root (who ignores permission bits), else without write permission."""
    folder = tmp_path / "media"
    folder.mkdir()
    store = folder / "s.sqlite"
    store.write_bytes((place[0] / "s.sqlite").read_bytes())
    if request.param == "read-only file":
        store.chmod(0o444)
        yield store
        return
    if os.geteuid() != 0:
        folder.chmod(0o555)
    elif shutil.which("chattr") is None or not _immutable(folder, True):
        pytest.skip("root writes to any folder, and this file system takes no immutable flag (chattr +i)")
    try:
        yield store
    finally:
        if os.geteuid() == 0:
            _immutable(folder, False)
        folder.chmod(0o755)


WRITERS = {
    "run": ["run", "-m", "digits-deit", "-n", "8", "--attacks", "fgsm", "-q"],
    "reproduce": ["reproduce", "elliptical-tiny-attacks", "-n", "8", "-q"],
    "check --run-missing": ["check", "--report", "checklist.md", "--run-missing"],
}


@pytest.mark.parametrize("writer", WRITERS)
def test_a_store_that_can_be_read_but_not_written_is_refused_by_writers_before_any_work(
    unwritable_store, writer, tmp_path
):
    folder = unwritable_store.parent
    before = digest(folder)
    assert invoke(["table", "--store", str(unwritable_store)], tmp_path).returncode == 0  # it can be read
    result = invoke([*WRITERS[writer], "--store", str(unwritable_store)], tmp_path)
    assert one_line_error(result, f"results store {unwritable_store} cannot be written"), result.stderr
    assert digest(folder) == before  # no -wal, no -shm, the store's bytes as they were
    assert sorted(p.name for p in tmp_path.iterdir()) == ["media"]  # no results folder, no checklist


# -- text from outside shown in a figure -------------------------------------------------------------

# Names as a user may give them or a store from someone else may hold them: mathtext would parse each
# (and fail on "\x"), TeX all of them.
MODEL = r"a$\x$_{b}^c"
ATTACK = r"f$\y$^{2}_"
PROTOCOL = r"p$\z$%#"
CLASS = r"$\q$^{}_"


@pytest.fixture(scope="module")
def figure_runs(tmp_path_factory) -> tuple[Path, list[str]]:
    """A store with a run of every figure's kind (eps curves, bars, minimum norms, convergence) and a shift
    run (severities), of a model named :data:`MODEL` and digits-deit; ``(folder, run ids)``."""
    folder = tmp_path_factory.mktemp("figures")
    (folder / "code.py").write_text(CODE)
    models, store = [f"{folder / 'code.py'}:build={MODEL}", "digits-deit"], folder / "s.sqlite"
    settings = {"pgd": {"steps": 3}, "fmn": FAST_SETTINGS["fmn"]}
    attacked = robeval.evaluate_full(
        models=models, n_examples=8, eps="4/255,8/255", attacks="fgsm,pgd,fmn", settings=settings, store=store
    )
    shifted = robeval.evaluate_full(
        models=models, n_examples=8, shift="corruptions", corruptions="gaussian_noise", severities="1,2", store=store
    )
    return folder, [str(attacked.run_id), str(shifted.run_id)]


EVERY_KIND = {"robust_top1_vs_eps", "bars_eps_4_255", "bars_eps_8_255", "robust_top1_vs_min_norm",
              "accuracy_vs_severity", "robust_top1_vs_iterations"}  # fmt: skip


def test_plot_and_report_show_a_model_name_of_math_characters_as_it_is_written(figure_runs):
    folder, run_ids = figure_runs
    plotted = invoke(["plot", *run_ids, "--store", "s.sqlite", "--out", "plots"], folder)
    assert plotted.returncode == 0, plotted.stderr
    svgs = {p.stem: p.read_text() for p in (folder / "plots").glob("*.svg")}
    assert set(svgs) >= EVERY_KIND
    assert [stem for stem, svg in svgs.items() if MODEL not in svg] == []  # in every legend, literally
    reported = invoke(["report", *run_ids, "--store", "s.sqlite", "--out", "report.html"], folder)
    assert reported.returncode == 0, reported.stderr
    assert MODEL in (folder / "report.html").read_text()


SHOWN = {  # a figure (its stem up to the eps) -> the outside text it shows: in titles, ticks, legends
    "robust_top1_vs_eps": [MODEL, ATTACK, PROTOCOL],
    "robust_top5_vs_eps": [MODEL, ATTACK, PROTOCOL],
    "bars_eps": [MODEL, ATTACK],
    "robust_top1_vs_iterations": [MODEL, ATTACK],
    "*": [MODEL],
}


def test_every_figure_shows_text_from_a_store_literally_in_titles_ticks_and_legends(figure_runs):
    folder, run_ids = figure_runs
    run = robeval.open_run(run_ids, folder / "s.sqlite")
    summary = run.summary.replace({"attack": {"pgd": ATTACK}, "protocol": {run.protocol: PROTOCOL}})
    with closing(Store(folder / "s.sqlite", read_only=True)) as store:
        curves = convergence_curves(store, run.runs)
    drawn = {**plots.figures(summary, minimal_norms(run.runs)),
             "robust_top1_vs_iterations": convergence_figure(curves.replace({"attack": {"pgd": ATTACK}}))}  # fmt: skip
    assert set(drawn) >= EVERY_KIND
    svgs = {stem: style.svg_text(figure) for stem, figure in drawn.items()}
    missing = {
        stem: [t for t in SHOWN.get(stem.rstrip("0123456789_"), SHOWN["*"]) if t not in svg]
        for stem, svg in svgs.items()
    }
    assert {stem: texts for stem, texts in missing.items() if texts} == {}


def test_the_gallery_shows_model_and_class_names_literally(figure_runs):
    folder, run_ids = figure_runs
    named = [f"{folder / 'code.py'}:build={MODEL}", "digits-deit"]  # the model's code named: a store never chooses it
    shown = gallery(folder / "s.sqlite", run_ids[0], models=named, attack="pgd", eps="8/255", max_examples=2)
    shown = dataclasses.replace(shown, class_name={i: f"{CLASS}{i}" for i in range(10)})
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # text as text, to be read back
        svg = shown.svg()
    assert MODEL in svg and CLASS in svg


# -- a read command on a store with no run to read --------------------------------------------------

CONFIG = {"models": ["digits-deit", "digits-deit-elliptical"], "eps": ["8/255"], "attacks": ["fgsm"]}
ABSENT = "20260101-000000-abcdef"  # a run id no store here has


@pytest.fixture(scope="module")
def runless(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """Stores without a run to read: a fresh one, one whose only run failed storing nothing, one whose only
    run is running (its process gone) with nothing stored; ``(folder, {store: the id of its run})``."""
    folder = tmp_path_factory.mktemp("runless")
    ids = {}
    for name, status in (("fresh", None), ("failed", "failed"), ("running", "running")):
        with closing(Store(folder / f"{name}.sqlite")) as store:
            ids[name] = ABSENT if status is None else store.create_run(CONFIG, {}, "standard")
            if status is not None:
                store.update_run(ids[name], status=status, holder=None)
    return folder, ids


READERS = [
    ["table"], ["table", "{run}"], ["check"], ["check", "{run}"], ["check", "--report", "checklist.md"],
    ["compare", "digits-deit", "digits-deit-elliptical"], ["compare", "{run}:digits-deit", "{run}:digits-deit-elliptical"],
    ["plot", "--out", "plots"], ["plot", "{run}", "--out", "plots"], ["report", "--out", "report.html"],
    ["report", "{run}", "--out", "report.html"], ["examples", "{run}", "-a", "fgsm", "--out", "examples.png"],
]  # fmt: skip


@pytest.mark.parametrize("store", ["fresh", "failed", "running"])
def test_every_read_command_on_a_store_without_a_run_to_read_answers_in_one_line(runless, store):
    folder, ids = runless
    before, wrong = digest(folder), {}
    for args in READERS:
        result = invoke([*(a.replace("{run}", ids[store]) for a in args), "--store", f"{store}.sqlite"], folder)
        if not one_line_error(result):
            wrong[" ".join(args)] = (result.returncode, result.stderr[-300:])
    assert not wrong, wrong
    listed = invoke(["runs", "--store", f"{store}.sqlite"], folder)  # an empty listing is an answer
    assert listed.returncode == 0 and not listed.stderr.strip(), listed.stderr
    assert ("no runs in" in listed.stdout) != (ids[store] in listed.stdout), listed.stdout  # none, or the run
    assert digest(folder) == before


FAILING_AFTER_THE_RUN_IS_FOUND = [  # the run taken is found, then the command fails: its note is no second line
    ["table", "--attacks", "pgd", "--store", "s.sqlite"],
    ["table", "--name", "absent=X", "--store", "s.sqlite"],
    ["report", "--baseline", "absent", "--out", "report.html", "--store", "s.sqlite"],
    ["check", "--report", "checklist.md", "--run-missing", "--store", "read-only.sqlite"],
]


@pytest.mark.parametrize("args", FAILING_AFTER_THE_RUN_IS_FOUND, ids=" ".join)
def test_a_read_command_that_fails_says_its_error_alone(place, args, tmp_path):
    for name in ("s.sqlite", "read-only.sqlite"):
        (tmp_path / name).write_bytes((place[0] / "s.sqlite").read_bytes())
    (tmp_path / "read-only.sqlite").chmod(0o444)
    before = digest(tmp_path)
    result = invoke(args, tmp_path)
    assert one_line_error(result), result.stderr
    assert digest(tmp_path) == before


# -- a comparison of a thing with itself -------------------------------------------------------------

ITSELF = [  # one model of one run on both sides, in each spelling; one run named twice
    (["compare", "digits-deit", "digits-deit"], "the same model of the same run"),
    (["compare", "{run}:digits-deit", "digits-deit"], "the same model of the same run"),
    (["compare", "digits-deit", "{run}:digits-deit"], "the same model of the same run"),
    (["compare", "{run}:digits-deit", "{run}:digits-deit", "-f", "csv"], "the same model of the same run"),
    (["table", "{run}", "{run}"], "is named twice"),
    (["plot", "{run}", "{run}", "--out", "plots"], "is named twice"),
    (["report", "{run}", "{run}", "--out", "report.html"], "is named twice"),
]


@pytest.mark.parametrize("args, words", ITSELF, ids=[" ".join(a) for a, _ in ITSELF])
def test_a_comparison_of_a_model_or_run_with_itself_is_refused(place, args, words):
    folder, run_id = place
    before = digest(folder)
    result = invoke([*(a.replace("{run}", run_id) for a in args), "--store", "s.sqlite"], folder)
    assert one_line_error(result, words), result.stderr
    assert digest(folder) == before


def test_open_run_refuses_to_compare_a_model_with_itself(place):
    folder, run_id = place
    with pytest.raises(UserError, match="the same model of the same run"):
        robeval.open_run(run_id, folder / "s.sqlite").compare("digits-deit", f"{run_id}:digits-deit")

"""``robeval.open_run``: a stored run read back in one line, and the result commands as its methods —
each CLI output equals the library call's (``table``, ``compare``, ``check``, ``plot``, ``report``)."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from PIL import Image

import robeval
from robeval.api import evaluate_full
from robeval.core.errors import UserError
from robeval.store import Store

from .conftest import one_line_error

MODELS = ["digits-deit", "digits-deit-elliptical"]
RUN = dict(models=MODELS, attacks="fgsm,pgd", eps="2/255,8/255", n_examples=16, settings={"pgd": {"steps": 3}})


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("open_run") / "s.sqlite"
    older = evaluate_full(store=path, **{**RUN, "models": ["digits-deit"], "attacks": "fgsm"})
    newest = evaluate_full(store=path, **RUN)
    return path, older.run_id, newest.run_id


def test_a_run_made_now_is_a_run_read_back_with_everything_it_offers(store, tmp_path):
    """``evaluate_full`` without a store keeps the run in memory and returns the type ``open_run``
    returns: the same records as the stored run of the same options, and every result method."""
    path, _, newest = store
    fresh = evaluate_full(**RUN)
    stored = robeval.open_run(newest, store=path)
    assert type(fresh) is type(stored) and fresh.status == "finished" and fresh.run_id != newest
    pd.testing.assert_frame_equal(fresh.records.drop(columns="run_id"), stored.records.drop(columns="run_id"))
    columns = ["model", "attack", "eps", "top1", "top5"]
    pd.testing.assert_frame_equal(fresh.summary[columns], stored.summary[columns])
    assert fresh.table("csv").splitlines()[0] == stored.table("csv").splitlines()[0]
    assert str(fresh.compare(*MODELS)).count("\n") == str(stored.compare(*MODELS)).count("\n")
    assert str(fresh.check()).startswith(f"Run {fresh.run_id} (standard, finished):\n")
    assert fresh.plot(tmp_path / "plots") and fresh.report(tmp_path / "r.html", gallery_size=0).exists()


def test_evaluate_full_takes_every_run_option_as_a_keyword_with_its_default():
    """The keywords are EvalConfig's declarations (declared once: issue 55, item 1), each with its default."""
    import inspect
    from dataclasses import fields

    from robeval.options import EvalConfig, option_default

    params = inspect.signature(evaluate_full).parameters
    for f in fields(EvalConfig):
        assert params[f.name].kind is inspect.Parameter.KEYWORD_ONLY, f.name
        assert params[f.name].default == option_default(f.name), f.name
    with pytest.raises(TypeError, match="unknown run option 'n_example'"):
        evaluate_full(n_example=4)  # a misspelt option is no option
    assert inspect.signature(robeval.evaluate).parameters == params  # one evaluate (issue 61): evaluate_full its alias


def printed(text: str) -> str:
    """What the CLI prints for ``text`` (print adds the newline a text lacks)."""
    return text if text.endswith("\n") else text + "\n"


def test_the_newest_finished_run_with_its_records_and_summary(store):
    path, older, newest = store
    run = robeval.open_run(store=path)
    assert run.run_id == newest and run.status == "finished" and run.protocol == "standard"
    db = Store(path)
    try:
        stored = db.records(newest)
    finally:
        db.close()
    assert run.records.columns[0] == "run_id" and set(run.records["run_id"]) == {newest}
    pd.testing.assert_frame_equal(run.records.drop(columns="run_id"), stored)
    assert set(run.summary["model"]) == set(MODELS) and set(run.summary["eps"]) == {"2/255", "8/255"}
    assert "Using the newest finished run " + newest in run.notes[0]
    named = robeval.open_run(older, store=path)
    assert named.run_id == older and named.notes == [] and set(named.summary["model"]) == {"digits-deit"}
    both = robeval.open_run([older, newest], store=path)
    assert set(both.records["run_id"]) == {older, newest}


@pytest.mark.parametrize("fmt", ["md", "csv", "latex", "json", "html"])
def test_table_prints_what_the_library_returns(store, cli, fmt):
    path, _, newest = store
    shown = cli("table", "--store", str(path), "--format", fmt)
    assert shown.returncode == 0, shown.stderr
    run = robeval.open_run(store=path)
    assert shown.stdout == printed(run.table(fmt))
    assert run.notes[0] in shown.stderr
    assert robeval.open_run(newest, store=path).table(fmt) == run.table(fmt)


@pytest.mark.parametrize("fmt", ["md", "csv", "json"])
def test_compare_prints_what_the_library_returns(store, cli, fmt):
    path, older, newest = store
    run = robeval.open_run(store=path)
    shown = cli("compare", *MODELS, "--store", str(path), "--format", fmt)
    assert shown.returncode == 0, shown.stderr
    compared = run.compare(*MODELS)
    picked = f"Compared in run {newest} (protocol standard"  # which run, and why, first: the data formats on stderr
    if fmt == "md":
        assert shown.stdout.startswith(picked) and shown.stdout.endswith(printed(compared.render(fmt)))
    else:
        assert shown.stdout == printed(compared.render(fmt)) and shown.stderr.startswith(picked)
    named = cli("compare", f"{older}:digits-deit", f"{newest}:digits-deit-elliptical", "--store", str(path), "-f", fmt)
    assert named.stdout == printed(run.compare(f"{older}:digits-deit", f"{newest}:digits-deit-elliptical").render(fmt))
    assert compared.a == f"{newest}:digits-deit" and set(compared.table["eps"]) == {"2/255", "8/255"}
    assert str(compared) == compared.render("md") and compared.protocol == "standard"
    if fmt == "json":
        assert json.loads(shown.stdout) == json.loads(compared.table.to_json(orient="records"))


def test_check_prints_what_the_library_returns_and_writes_its_checklist(store, cli, tmp_path):
    path, _, newest = store
    run = robeval.open_run(store=path)
    shown = cli("check", "--store", str(path), "--report", str(tmp_path / "cli.md"))
    assert shown.returncode == 0, shown.stderr
    checked = run.check()
    text = str(checked)
    assert text.startswith(f"Run {newest} (standard, finished):\n") and "Soundness checks:" in text
    assert shown.stdout == text + f"Wrote the checklist to {tmp_path / 'cli.md'}\n"
    written = run.checklist(tmp_path / "lib.md")
    assert written.path.read_text() == written.text == (tmp_path / "cli.md").read_text() == checked.render("checklist")
    assert {m.model for m in checked.judged.models} == set(MODELS) and all(f.raised for f in checked.flags)
    assert "| Accuracy reaches 0 at a large eps |" in written.text and written.evidence_run is None


def test_plot_writes_the_files_the_library_writes(store, cli, tmp_path):
    path, _, _ = store
    shown = cli("plot", "--store", str(path), "--out", str(tmp_path / "cli"))
    assert shown.returncode == 0, shown.stderr
    paths = robeval.open_run(store=path).plot(tmp_path / "lib")
    assert shown.stdout == f"Wrote {len(paths)} files to {tmp_path / 'cli'}: " + ", ".join(p.name for p in paths) + "\n"
    assert sorted(p.name for p in (tmp_path / "cli").iterdir()) == sorted(p.name for p in paths)
    for png in (p for p in paths if p.suffix == ".png"):
        with Image.open(png) as ours, Image.open(tmp_path / "cli" / png.name) as theirs:
            assert np.array_equal(np.asarray(ours), np.asarray(theirs)), png.name


def test_report_writes_the_page_the_library_writes(store, cli, tmp_path):
    path, _, newest = store
    shown = cli("report", "--store", str(path), "--out", str(tmp_path / "cli.html"), "--gallery-size", "0")
    assert shown.returncode == 0, shown.stderr
    written = robeval.open_run(store=path).report(tmp_path / "lib.html", gallery_size=0)
    assert written == tmp_path / "lib.html" and f"Wrote {tmp_path / 'cli.html'} (" in shown.stdout
    # what differs between two drawings of one page: when each was written, matplotlib's random SVG ids
    drawn = re.compile(r"written \d{4}-\d\d-\d\d \d\d:\d\d UTC|<dc:date>[^<]*</dc:date>|\b[pm][0-9a-f]{10}\b")
    page, theirs = (drawn.sub("", p.read_text()) for p in (written, tmp_path / "cli.html"))
    assert page == theirs and f"Run {newest}" in page


def test_a_missing_store_or_run_is_one_line_and_creates_nothing(store, cli, tmp_path):
    path, _, _ = store
    missing = tmp_path / "none.sqlite"
    with pytest.raises(UserError, match="results store not found"):
        robeval.open_run(store=missing)
    assert not missing.exists() and list(tmp_path.iterdir()) == []
    with pytest.raises(UserError, match="no run 'nope'"):
        robeval.open_run("nope", store=path)
    for verb in ("table", "plot", "check", "report"):
        assert one_line_error(cli(verb, "nope", "--store", str(path)), "no run 'nope'"), verb
    assert one_line_error(cli("table", "--store", str(missing)), "results store not found")
    assert not missing.exists()


def test_a_bad_compare_format_is_one_line(store, cli):
    path, _, _ = store
    assert one_line_error(cli("compare", *MODELS, "--store", str(path), "-f", "latex"), "unknown format 'latex'")
    with pytest.raises(UserError, match="unknown format"):
        robeval.open_run(store=path).compare(*MODELS).render("latex")


def test_a_run_just_made_is_the_run_read_back(tmp_path):
    """One Run: made by evaluate_full or read back by open_run, the same type, description (flags, caveats,
    passes per image included), summary and records (issue 55, item 1)."""
    made = robeval.evaluate_full(models=list(MODELS), n_examples=8, attacks="fgsm", store=tmp_path / "s.sqlite")
    back = robeval.open_run(made.run_id, store=tmp_path / "s.sqlite")
    assert type(made) is type(back)
    assert json.dumps(made.info, sort_keys=True, default=str) == json.dumps(back.info, sort_keys=True, default=str)
    assert {"flags", "caveats", "passes_per_image"} <= set(back.info)
    assert made.summary.equals(back.summary) and made.records.equals(back.records)

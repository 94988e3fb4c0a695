"""A run that did not finish everything says so in every output: table captions, the CSV/JSON
``status`` columns, the terminal, plots and the checklist; its worst case covers finished attacks
only; a run that stopped a model exits non-zero after writing what it has."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch

import robeval
from robeval.api import evaluate_full
from robeval.attacks import autoattack
from robeval.report.naming import is_incomplete
from robeval.report.paper import render
from robeval.results.runs import combine, load_run
from robeval.store import Store

from .test_shifts import StopAfter


def _boom(self, x, y):
    raise IndexError("index 10 is out of bounds for dimension 1 with size 10")


def test_a_failed_attack_stops_its_model_and_the_run_exits_non_zero(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(autoattack.APGDT, "perturb", _boom)
    store, out = tmp_path / "s.sqlite", tmp_path / "o"
    result = cli("run", "-m", "digits-deit", "-n", "10", "--attacks", "fgsm,apgd-t", "--quiet", "--store", str(store),
                 "--out", str(out))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "Stopped model digits-deit: attack apgd-t failed at eps 8/255, batch 0: IndexError" in result.stdout
    df = pd.read_csv(out / "results.csv", keep_default_na=False)
    rows = df.set_index("attack")
    assert list(df["attack"]) == ["clean", "fgsm", "any"]  # no row for the attack that failed
    assert (df["run_status"] == "failed").all() and (df["status"] == "complete").all()
    assert rows.loc["clean", "not_run"] == "apgd-t" and rows.loc["any", "any_over"] == "fgsm"
    assert "INCOMPLETE: run" in (out / "results.md").read_text() and "not run: digits-deit: apgd-t" in result.stdout
    assert Store(store).runs()["status"].iloc[0] == "failed"
    shown = cli("table", "--store", str(store), json.loads((out / "run.json").read_text())["run_id"], "-f", "json")
    assert shown.returncode == 0 and "warning: run" in shown.stderr and "failed" in shown.stderr
    assert {r["run_status"] for r in json.loads(shown.stdout)} == {"failed"}


def test_a_model_with_nan_logits_stops_alone_and_the_run_exits_non_zero(cli, tmp_path):
    state = robeval.load_model("digits-deit").net.state_dict()
    state["head.weight"] = torch.full_like(state["head.weight"], float("nan"))
    torch.save(state, tmp_path / "nan.pth")
    result = cli("run", "-m", "digits-deit", "-m", "digits-deit-elliptical", "--checkpoint",
                 f"digits-deit={tmp_path / 'nan.pth'}", "-n", "10", "--attacks", "fgsm", "--quiet",
                 "--store", str(tmp_path / "s.sqlite"), "--out", str(tmp_path / "o"))
    assert result.returncode == 1 and "Stopped model digits-deit: NaN or inf logits" in result.stdout
    df = pd.read_csv(tmp_path / "o" / "results.csv")
    assert set(df["model"]) == {"digits-deit-elliptical"} and (df["run_status"] == "failed").all()
    assert "digits-deit" in json.loads((tmp_path / "o" / "run.json").read_text())["failed_models"]


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    """A run stopped after 5 of its units: clean and fgsm of both batches, pgd of the first only."""
    store = Store(tmp_path_factory.mktemp("stop") / "s.sqlite")
    with pytest.raises(KeyboardInterrupt):
        evaluate_full(models="digits-deit", n_examples=20, batch_size=10, attacks="fgsm,pgd", store=store,
                      reporter=StopAfter(3))
    return store, store.runs()["id"].iloc[0]


def test_an_interrupted_run_marks_partial_rows_and_its_worst_case_covers_finished_attacks(interrupted):
    store, run_id = interrupted
    run = load_run(store, run_id)
    rows = run.summary.set_index("attack")
    assert run.status == "interrupted" and (run.summary["run_status"] == "interrupted").all()
    assert rows.loc["fgsm", "status"] == "complete" and rows.loc["fgsm", "batches"] == "2/2"
    assert rows.loc["pgd", "status"] == "partial" and rows.loc["pgd", "batches"] == "1/2"
    assert rows.loc["any", "any_over"] == ("fgsm",) and rows.loc["any", "n"] == 20  # pgd saw half the images
    text = render(run.summary, "md")
    assert "INCOMPLETE: run" in text and "partial rows: digits-deit pgd (1/2 batches)" in text
    assert "Any (worst case) covers, per model: digits-deit: fgsm" in text
    assert is_incomplete(run.summary)


def test_no_worst_case_where_no_attack_finished(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    with pytest.raises(KeyboardInterrupt):
        evaluate_full(models="digits-deit", n_examples=20, batch_size=10, attacks="fgsm", store=store,
                      reporter=StopAfter(1))
    summary = load_run(store, store.runs()["id"].iloc[0]).summary
    assert "any" not in set(summary["attack"]) and "fgsm" in set(summary["attack"])  # not the clean accuracy


def test_plots_and_checklist_of_an_incomplete_run_say_so(cli, interrupted, tmp_path):
    store, run_id = interrupted
    plotted = cli("plot", run_id, "--store", str(store.path), "--out", str(tmp_path / "plots"))
    assert plotted.returncode == 0 and "warning: run" in plotted.stderr
    (bars,) = (tmp_path / "plots").glob("bars_eps_*.svg")  # one eps: no eps curve, one bar chart
    assert "INCOMPLETE" in bars.read_text() and not (tmp_path / "plots" / "robust_top1_vs_eps.svg").exists()
    checked = cli("check", run_id, "--store", str(store.path), "--report", str(tmp_path / "r.md"))
    assert "interrupted" in checked.stdout and "INCOMPLETE" in (tmp_path / "r.md").read_text()


def test_worst_cases_over_different_attacks_are_not_compared(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    evaluate_full(models="digits-deit", n_examples=10, attacks="fgsm,pgd", store=store)
    evaluate_full(models="digits-deit-elliptical", n_examples=10, attacks="fgsm", store=store)
    runs = [load_run(store, r) for r in store.runs()["id"]]
    text = render(combine(runs), "md")
    any_cells = [line.split("|")[-3:-1] for line in text.splitlines() if line.startswith("| digits-")]
    assert not any("**" in cell for cells in any_cells for cell in cells)  # no bold in the Any columns
    assert "Any (worst case) covers, per model: digits-deit: fgsm, pgd; digits-deit-elliptical: fgsm" in text

"""Combined tables and what their captions say: runs that differ only in eps combine, transfer rows
name their source, LaTeX captions carry math and no machine path, every caption states what it shows."""

from __future__ import annotations

import pandas as pd
import pytest

import robeval
from robeval.api import evaluate_full
from robeval.report.naming import caption_parts, data_label
from robeval.report.paper import render
from robeval.results.runs import combine, load_run, resolve_runs
from robeval.store import Store

from .conftest import FAST_SETTINGS


@pytest.fixture(scope="module")
def two_eps_runs(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("eps") / "s.sqlite")
    for eps in ("8/255", "16/255"):
        evaluate_full(n_examples=10, attacks="fgsm,pgd", eps=eps, store=store)
    return store


def test_runs_that_differ_only_in_eps_combine(two_eps_runs):
    runs = [load_run(two_eps_runs, r) for r in two_eps_runs.runs()["id"]]
    table = combine(runs)
    assert list(dict.fromkeys(table["eps"])) == ["8/255", "16/255"]
    assert set(table["model"]) == {"digits-deit", "digits-deit-elliptical"}  # one model, two eps: no run-id labels
    text = render(table, "md")
    assert text.count("Table: Top-1 / top-5 accuracy") == 2


def test_the_same_model_twice_at_one_eps_is_told_apart(two_eps_runs):
    first = load_run(two_eps_runs, two_eps_runs.runs()["id"].iloc[0])
    table = combine([first, first])
    assert f"digits-deit ({first.run_id})" in set(table["model"])


def test_a_bare_table_reads_the_newest_run_with_the_runs_made_for_its_checklist(two_eps_runs):
    from robeval.api import large_eps_run

    parent = two_eps_runs.runs()["id"].iloc[-1]
    extra = large_eps_run(robeval.open_run(parent, store=two_eps_runs))
    runs = resolve_runs(two_eps_runs, [])
    assert [r.run_id for r in runs] == [parent, extra.run_id]
    assert {"16/255", "64/255"} <= set(combine(runs)["eps"])
    run = robeval.open_run(store=two_eps_runs)  # its table takes the evidence in, its records are its own
    assert {"16/255", "64/255"} <= set(run.summary["eps"]) and set(run.records["run_id"]) == {parent}
    assert set(run.records_with_evidence["run_id"]) == {parent, extra.run_id}
    assert "64/255" not in set(run.records["eps"]) and "64/255" in set(run.records_with_evidence["eps"])


def test_transfer_rows_name_their_source():
    res = evaluate_full(models="digits-deit-elliptical", n_examples=10, attacks="transfer-pgd", source_model="digits-deit")
    row = res.summary.set_index("attack").loc["transfer-pgd"]
    assert row["source_model"] == "digits-deit"
    assert "transfer-pgd: images crafted on digits-deit" in render(res.summary, "md")


def test_latex_captions_write_math_and_no_machine_path(tmp_path):
    summary = evaluate_full(models="digits-deit", n_examples=10, attacks="fgsm").summary
    summary["data"] = "/home/someone/datasets/imagenet/val"
    text = render(summary, "latex")
    assert r"$\ell_\infty$, $\epsilon = 8/255$" in text and "Linf eps" not in text
    assert "/home/someone" not in text and "imagenet/val" in text
    assert data_label("digits") == "digits" and data_label("/a/b/c (ImageNet-C)") == "b/c (ImageNet-C)"
    assert data_label("/data/mine (copy)/val") == "mine (copy)/val" and data_label("cifar10 (test)") == "cifar10 (test)"
    assert caption_parts(summary, "8/255")[0].startswith("Top-1 / top-5 accuracy (%) under attack, Linf eps = 8/255")


def test_the_paper_protocol_says_why_fab_t_equals_clean_accuracy():
    res = evaluate_full(models="digits-deit", n_examples=10, attacks="fab-t", protocol="nielsen2024",
                        settings={"fab-t": FAST_SETTINGS["fab-t"]})
    rows = res.summary.set_index("attack")
    assert rows.loc["fab-t", "top1"] == rows.loc["clean", "top1"]
    assert "under this protocol it finds none, so FAB-T equals clean accuracy" in render(res.summary, "md")


def test_an_accuracy_table_caption_says_top_1_only(tmp_path):
    from robeval.api import reproduce

    result = reproduce("swin-s-attention", n_examples=10, out=tmp_path / "o", store=str(tmp_path / "s.sqlite"))
    assert "Top-1 clean accuracy" in result.text and "top-5" not in result.text.lower()
    assert isinstance(result.grid, pd.DataFrame) and "Top-5" not in " ".join(result.grid.columns)


def test_the_terminal_table_keeps_many_model_names_whole():
    from rich.console import Console

    from robeval.report.paper import paper_document
    from robeval.report.terminal import to_rich

    summary = evaluate_full(models="digits-deit*", n_examples=10, attacks="fgsm", weights="random").summary
    console = Console(width=100, record=True)
    for table in to_rich(paper_document(summary)):
        console.print(table)
    text = console.export_text()
    assert len(set(summary["model"])) > 3 and all(m in text for m in set(summary["model"]))

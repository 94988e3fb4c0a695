"""Every table states its recipes: a table whose models (or the members of one) were trained with different
recipes names what differs in every format, and bolds no difference between models trained apart (its
would-be bold marked ‡ instead); models trained alike bold as compare separates; an unknown recipe is said
once; ``robeval reproduce`` says the same."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from rich.console import Console

import robeval
from robeval.core.defaults import DEMO_RECIPE, Recipe
from robeval.report.bests import RECIPES_DIFFER, SEPARATED, mark_bests
from robeval.report.files import write_run_files
from robeval.report.naming import recipe_parts
from robeval.report.paper import paper_document
from robeval.report.terminal import to_rich
from robeval.results.likeness import recipe_cells

from .conftest import run_cli
from .test_bests import marks_agree_with_compare, records, retrained, summary_of

APART = Recipe(epochs=20, lr=0.003, stochastic_depth=0.1)  # the baseline trained otherwise, on purpose
NOTE = "trained with different recipes (digits-deit: epochs 20, lr 0.003; digits-deit-elliptical: epochs 300, lr 0.001)"


def recipes_mark(cell: str) -> bool:
    return cell.endswith("‡")


@pytest.fixture(scope="module")
def baselines(tmp_path_factory):
    """digits-deit retrained worse than the shipped digits-deit-elliptical (clearly separated), once with
    another recipe than the elliptical's and once with the same one: the same weights, two recipes."""
    folder = tmp_path_factory.mktemp("baselines")
    options = dict(models=["digits-deit", "digits-deit-elliptical"], n_examples=40, attacks="fgsm",
                   store=folder / "s.sqlite", progress=False)  # fmt: skip
    made = {}
    for name, recipe in (("apart", APART), ("alike", DEMO_RECIPE)):
        path = retrained(folder / f"{name}.safetensors", recipe, seed=1, noise=0.3)
        made[name] = robeval.evaluate_full(checkpoints={"digits-deit": str(path)}, **options)
    return folder, made


def test_a_mismatched_baseline_names_the_recipes_and_bolds_nothing_between_the_two(baselines):
    _, made = baselines
    run = made["apart"]
    md = run.table("md")
    assert NOTE in md and "‡ recipes differ, see note" in md and "**" not in md
    assert marks_agree_with_compare(run, md, recipes_mark) >= 1  # what bold would be is marked instead
    latex, html = run.table("latex"), run.table("html")
    assert NOTE in latex and r"$^\ddagger$" in latex and r"\mathbf" not in latex and r"\textbf{" not in latex
    assert NOTE in html and "<sup>‡</sup>" in html and 'class="best"' not in html
    renamed = run.table("md", names={"digits-deit": "DeiT"})  # the note names each model as the table shows it
    assert "(DeiT: epochs 20, lr 0.003; digits-deit-elliptical: epochs 300, lr 0.001)" in renamed


def test_the_recipes_are_a_field_of_csv_and_json_said_on_stderr(baselines):
    folder, made = baselines
    run = made["apart"]
    csv = pd.read_csv(io.StringIO(run.table("csv")))
    assert dict(zip(csv["model"], csv["recipe"])) == {"digits-deit": "epochs 20, lr 0.003",
                                                      "digits-deit-elliptical": "epochs 300, lr 0.001"}  # fmt: skip
    rows = json.loads(run.table("json"))
    assert {r["model"]: r["recipe"] for r in rows}["digits-deit"] == ["epochs 20, lr 0.003"]
    said = run_cli("table", run.run_id, "--store", str(folder / "s.sqlite"), "-f", "csv")
    assert said.returncode == 0 and f"note: {NOTE}" in said.stderr


def test_results_md_the_terminal_and_the_report_name_the_recipes(baselines, tmp_path):
    _, made = baselines
    run = made["apart"]
    files = write_run_files(run, tmp_path / "out")
    written = files["md"].read_text()
    assert NOTE in written and "‡" in written and "**" not in written
    console = Console(record=True, width=300, color_system=None)
    for renderable in to_rich(paper_document(mark_bests(run.summary, run.records))):
        console.print(renderable)
    shown = console.export_text()
    assert NOTE in shown and "‡ recipes differ, see note" in shown and "‡" in shown.split(NOTE)[1]
    page = run.report(tmp_path / "r.html", gallery_size=0).read_text()
    assert NOTE in page and "<sup>‡</sup>" in page


def test_a_fair_baseline_bolds_where_compare_separates_and_says_no_recipe(baselines):
    _, made = baselines
    run = made["alike"]
    md = run.table("md")
    assert "recipe" not in md and "‡" not in md and "recipe" not in run.summary
    assert marks_agree_with_compare(run, md) >= 1  # the same weights as the mismatched run's: now bold


def test_runs_combined_with_a_baseline_trained_otherwise_bold_nothing_across_the_recipes(baselines):
    """The issue's case: the baseline trained with another recipe, then again (alone) with the same one as the
    new model, both runs in one table: the note names each run's digits-deit, and the new model's clear lead
    is not bold, even over the baseline trained alike, since the column holds one trained otherwise."""
    folder, made = baselines
    again = robeval.evaluate_full(models="digits-deit", checkpoints={"digits-deit": str(folder / "alike.safetensors")},
                                  n_examples=40, attacks="fgsm", store=folder / "s.sqlite", progress=False)  # fmt: skip
    run = robeval.open_run([again.run_id, made["apart"].run_id], store=folder / "s.sqlite")
    md = run.table("md")
    apart = f"digits-deit ({made['apart'].run_id}): epochs 20, lr 0.003"
    assert f"(digits-deit: epochs 300, lr 0.001; {apart}; digits-deit-elliptical: epochs 300, lr 0.001)" in md
    assert "**" not in md and marks_agree_with_compare(run, md, recipes_mark) >= 1


def test_an_unknown_recipe_is_said_once_and_not_judged():
    """Recipes no weights file records are said once, in one phrase; nothing is said where none is recorded
    (a table of hub weights), or where every recorded one agrees (1e-3 is 0.001)."""
    known = {"epochs": "300", "lr": "0.001", "seed": "0"}
    assert (
        recipe_cells({"a": [None], "b": [None]}) == {}
        and recipe_cells({"a": [known], "b": [dict(known, lr="1e-3", seed="1")]}) == {}
    )
    cells = recipe_cells({"a": [known], "b": [None], "c": [None]})
    summary = pd.DataFrame({"model": ["a", "b", "c"], "recipe": [cells[m] for m in "abc"]})
    assert recipe_parts(summary) == ["recipe unknown (the weights record none): b, c"]


def test_members_trained_otherwise_are_named_and_their_best_is_not_bold():
    """A model whose members were trained with two recipes: the note gives both, and a best it is, clearly
    separated, is marked rather than bold; the same records with one recipe are bold."""
    found = pd.concat([records("a", {"pgd": 0.9}, members=2, seed=1), records("b", {"pgd": 0.4}, members=2, seed=2)])
    one, other = ({"epochs": e, "lr": "0.001", "seed": "0"} for e in ("20", "30"))
    cells = recipe_cells({"a": [one, other], "b": [one, one]})
    assert (
        cells == {"a": ("epochs 20", "epochs 30"), "b": ("epochs 20",)} and str(cells["a"]) == "epochs 20 / epochs 30"
    )
    summary = summary_of(found)
    assert mark_bests(summary, found).set_index("model").loc["a", "best_top1"] == SEPARATED
    summary["recipe"] = summary["model"].map(cells)
    assert mark_bests(summary, found).set_index("model").loc["a", "best_top1"] == RECIPES_DIFFER
    assert recipe_parts(summary) == ["trained with different recipes (a: epochs 20 / epochs 30; b: epochs 20)"]


def test_reproduce_names_the_recipes_of_its_rows(tmp_path):
    from robeval.api import reproduce
    from robeval.reproduce.tables import TABLES, PaperTable, Row, register_table

    rows = (
        Row("DeiT", "deit-tiny", "digits-deit"),
        Row("DeiT-Elliptical", "deit-tiny-elliptical", "digits-deit-elliptical"),
    )
    register_table(PaperTable("recipes-table", "A toy table", "tests", "attacks", rows, attacks=("fgsm",)))
    try:
        path = retrained(tmp_path / "apart.safetensors", APART, seed=1, noise=0.3)
        rep = reproduce("recipes-table", data="digits", checkpoints={"DeiT": str(path)}, n_examples=8,
                        store=str(tmp_path / "s.sqlite"), out=tmp_path / "o")  # fmt: skip
    finally:
        TABLES.remove("recipes-table")
    assert NOTE in rep.text and NOTE in rep.files["md"].read_text() and NOTE in rep.files["tex"].read_text()

"""Comparisons only of like with like (robeval.results.likeness): ``robeval compare`` refuses, in one
line, two sides that differ in any aspect of the registry; ``robeval table`` and ``robeval report``
refuse the same differences between runs, except in attack settings between a run and the run made as
evidence for it (``check --run-missing``), which their caption names."""

from __future__ import annotations

import json

import pytest

import robeval
from robeval.results.likeness import ASPECTS, Side, differences
from robeval.results.runs import load_run
from robeval.store import Store

from .conftest import one_line_error

BASE = dict(models=["digits-deit"], n_examples=8, eps="8/255", attacks="fgsm,pgd", settings={"pgd": {"steps": 3}},
            device="cpu")  # fmt: skip
# Per aspect of the registry: the options of a run that differs from BASE in it alone, and the words
# compare's one line must say.
CASES = {
    "protocol": (dict(protocol="nielsen2024"), "protocol (standard vs nielsen2024)"),
    "threat model": (dict(norm="L2", eps="0.5"), "threat model (Linf vs L2)"),
    "precision": (dict(precision="bf16"), "precision (fp32 vs bf16)"),
    "cascade": (dict(cascade=True), "cascade (without --cascade vs with --cascade)"),
    "data": (dict(shift="corruptions", corruptions="gaussian_noise", severities="1"),
             "data (digits vs digits under --shift corruptions)"),
    "examples": (dict(n_examples=12), "examples (8 vs 12, 8 shared)"),
    "eps": (dict(eps="4/255"), "eps (8/255 vs 4/255)"),
    "attack settings": (dict(settings={"pgd": {"steps": 5}}), "attack settings (pgd steps 3 vs 5)"),
}  # fmt: skip


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A store with the base run, a second run just like it, and one run per case."""
    path = tmp_path_factory.mktemp("like") / "s.sqlite"
    ids = {name: robeval.evaluate_full(**{**BASE, **options}, store=path).run_id
           for name, (options, _) in {"base": ({}, ""), "twin": ({}, ""), **CASES}.items()}  # fmt: skip
    evidence = dict(settings={"pgd": {"steps": 5}}, attacks="pgd", eps="16/255", evidence_for=ids["base"])
    ids["evidence"] = robeval.evaluate_full(**{**BASE, **evidence}, store=path).run_id
    return path, ids


def test_every_aspect_has_a_case():
    assert set(CASES) == set(ASPECTS)


@pytest.mark.parametrize("aspect", list(CASES))
def test_compare_refuses_two_sides_that_differ_in_one_aspect(store, cli, aspect):
    path, ids = store
    result = cli("compare", f"{ids['base']}:digits-deit", f"{ids[aspect]}:digits-deit", "--store", str(path))
    assert one_line_error(result, CASES[aspect][1], "compare pairs like with like only")


def test_compare_pairs_two_runs_made_alike(store, cli):
    path, ids = store
    result = cli("compare", f"{ids['base']}:digits-deit", f"{ids['twin']}:digits-deit", "--store", str(path))
    assert result.returncode == 0 and "| 8/255 | pgd | 8 |" in result.stdout
    db = Store(path)
    assert differences(Side(load_run(db, ids["base"])), Side(load_run(db, ids["twin"]))) == []


def test_settings_are_compared_as_the_store_gives_them_back(store, cli):
    """A store that reads an older run's settings back in today's meaning (normalised) makes the two runs
    differ, even where their options were written alike: the check reads what the store returns."""
    path, ids = store
    db = Store(path)
    info = db.run(ids["twin"])["info"]
    db.update_run(ids["twin"], info={**info, "attack_settings": {**info["attack_settings"], "fgsm": {"eot_iter": 2}}})
    try:
        result = cli("compare", f"{ids['base']}:digits-deit", f"{ids['twin']}:digits-deit", "--store", str(path))
        assert one_line_error(result, "attack settings (fgsm eot_iter 1 vs 2)")
    finally:
        db.update_run(ids["twin"], info=info)


def test_table_refuses_every_difference_but_names_an_evidence_runs_settings_in_its_caption(store, cli):
    path, ids = store
    for aspect in ("protocol", "threat model", "precision", "cascade", "examples", "attack settings"):
        refused = cli("table", ids["base"], ids[aspect], "--store", str(path))
        assert one_line_error(refused, f"differ in {CASES[aspect][1]}", "a table never mixes them"), aspect
    table = cli("table", ids["base"], ids["evidence"], "--store", str(path))
    assert table.returncode == 0, table.stderr
    line = f"NOT LIKE WITH LIKE: runs {ids['base']} vs {ids['evidence']} differ in attack settings (pgd steps 3 vs 5)"
    assert line in table.stdout
    alone = cli("table", ids["base"], "--store", str(path))
    assert alone.returncode == 0 and "NOT LIKE WITH LIKE" not in alone.stdout


def test_the_report_shows_the_tables_caption(store, cli, tmp_path):
    path, ids = store
    out = tmp_path / "r.html"
    result = cli("report", ids["base"], ids["evidence"], "--store", str(path), "--out", str(out),
                 "--gallery-size", "0")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "NOT LIKE WITH LIKE" in out.read_text() and "pgd steps 3 vs 5" in out.read_text()
    refused = cli("report", ids["base"], ids["precision"], "--store", str(path), "--out", str(tmp_path / "x.html"))
    assert one_line_error(refused, "differ in precision (fp32 vs bf16)") and not (tmp_path / "x.html").exists()


def test_the_json_table_keeps_the_note_on_every_row(store, cli):
    path, ids = store
    rows = json.loads(cli("table", ids["base"], ids["evidence"], "--store", str(path), "-f", "json").stdout)
    assert {r["unlike"] for r in rows} == {f"runs {ids['base']} vs {ids['evidence']} differ in attack "
                                           "settings (pgd steps 3 vs 5)"}  # fmt: skip

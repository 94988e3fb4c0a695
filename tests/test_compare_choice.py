"""Bare ``robeval compare A B`` says which run it took and why on its first line, naming each aspect of its
evaluation (protocol, eps, norm, precision, cascade, data, split, attacks), and where the runs that evaluated
both differ in any of them it lists them and asks for a run id (issues 54 and 60)."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

import robeval
from robeval.results.runs import PAIR_ASPECTS

from .conftest import FAST_SETTINGS, invoke, one_line_error

PAIR = ["digits-deit", "digits-deit-elliptical"]


def test_compare_names_the_run_it_took_and_refuses_to_guess_between_protocols(tmp_path):
    store = tmp_path / "s.sqlite"
    older = robeval.evaluate_full(models=PAIR, n_examples=8, attacks="fgsm", store=store, progress=False)
    newer = robeval.evaluate_full(models=PAIR, n_examples=8, attacks="fgsm", store=store, progress=False)
    said = invoke(["compare", *PAIR, "--store", str(store)], tmp_path)
    first = said.stdout.splitlines()[0]
    assert said.returncode == 0 and first.startswith(f"Compared in run {newer.run_id} (protocol standard, eps 8/255")
    assert "the newest finished run that evaluated both; 1 older run(s) of the same evaluation" in first
    data = invoke(["compare", *PAIR, "--store", str(store), "-f", "csv"], tmp_path)
    assert data.stdout.startswith("eps,attack,") and f"Compared in run {newer.run_id}" in data.stderr  # data stays data
    short = {a: FAST_SETTINGS[a] for a in ("apgd-ce", "fab-t", "square")}
    fast = robeval.evaluate_full(models=PAIR, n_examples=8, protocol="fast", settings=short, store=store,
                                 progress=False)  # fmt: skip
    refused = invoke(["compare", *PAIR, "--store", str(store)], tmp_path)
    assert one_line_error(refused, "3 finished runs that differ in protocol", f"{fast.run_id} (protocol fast",
                          f"{older.run_id} (protocol standard", f"robeval compare {fast.run_id}:digits-deit")  # fmt: skip
    named = invoke(["compare", f"{older.run_id}:digits-deit", f"{older.run_id}:digits-deit-elliptical", "--store",
                    str(store)], tmp_path)  # fmt: skip
    assert named.returncode == 0 and not named.stdout.startswith("Compared in run")  # named: nothing to say


@pytest.fixture(scope="module")
def l2_run(tmp_path_factory):
    store = tmp_path_factory.mktemp("l2") / "s.sqlite"
    run = robeval.evaluate_full(models=PAIR, n_examples=8, attacks="fgsm", norm="L2", eps="0.5", store=store,
                                progress=False)  # fmt: skip
    return store, run.run_id


def test_a_bare_compare_names_every_aspect_of_the_run_it_took(l2_run, tmp_path):
    store, run_id = l2_run
    said = invoke(["compare", *PAIR, "--store", str(store)], tmp_path)
    assert said.returncode == 0 and said.stdout.splitlines()[0].startswith(
        f"Compared in run {run_id} (protocol standard, eps 0.5, norm L2, precision fp32, cascade off, data digits, "
        "split test, attacks fgsm), the newest finished run that evaluated both"
    )


def test_runs_of_the_pair_under_another_threat_model_are_not_taken_for_the_same(l2_run, tmp_path):
    """The user's case: the pair at eps 0.5 under L-inf and under L2; the bare compare must ask which."""
    store = tmp_path / "s.sqlite"
    shutil.copy(l2_run[0], store)
    linf = robeval.evaluate_full(models=PAIR, n_examples=8, attacks="fgsm", eps="0.5", store=store, progress=False)
    refused = invoke(["compare", *PAIR, "--store", str(store)], tmp_path)
    assert one_line_error(refused, "2 finished runs that differ in norm:", f"{linf.run_id} (norm Linf)",
                          f"{l2_run[1]} (norm L2)")  # fmt: skip


OTHER = {"protocol": "fast", "eps": ["1/255"], "norm": "Linf", "precision": "bf16", "cascade": True,
         "data": "cifar10", "split": "train", "attacks": ["pgd"]}  # fmt: skip


@pytest.mark.parametrize("aspect", PAIR_ASPECTS)
def test_runs_that_differ_in_any_aspect_are_listed_not_chosen_between(l2_run, tmp_path, aspect):
    """A second finished run of the pair, alike but for ``aspect`` (its stored configuration changed): the bare
    compare refuses in one line naming that aspect and both runs' values of it."""
    store = tmp_path / "s.sqlite"
    shutil.copy(l2_run[0], store)
    with sqlite3.connect(store) as db:
        row = db.execute("SELECT * FROM runs WHERE id = ?", (l2_run[1],)).fetchone()
        names = [c[0] for c in db.execute("SELECT * FROM runs").description]
        config = json.loads(row[names.index("config")])
        config[aspect] = OTHER[aspect]
        copy = dict(zip(names, row), id="other", created="9999-01-01T00:00:00", config=json.dumps(config))
        db.execute(f"INSERT INTO runs ({', '.join(copy)}) VALUES ({', '.join('?' * len(copy))})", list(copy.values()))
    refused = invoke(["compare", *PAIR, "--store", str(store)], tmp_path)
    assert one_line_error(refused, f"2 finished runs that differ in {aspect}:", "other (", f"{l2_run[1]} ("), (
        refused.stderr
    )

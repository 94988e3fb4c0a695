"""Bare ``robeval compare A B`` says which run it took and why on its first line, and where the runs that
evaluated both differ in protocol or eps it lists them and asks for a run id (issue 54, item 5)."""

from __future__ import annotations

import robeval

from .conftest import FAST_SETTINGS, invoke, one_line_error

PAIR = ["digits-deit", "digits-deit-elliptical"]


def test_compare_names_the_run_it_took_and_refuses_to_guess_between_protocols(tmp_path):
    store = tmp_path / "s.sqlite"
    older = robeval.evaluate_full(models=PAIR, n_examples=8, attacks="fgsm", store=store, progress=False)
    newer = robeval.evaluate_full(models=PAIR, n_examples=8, attacks="fgsm", store=store, progress=False)
    said = invoke(["compare", *PAIR, "--store", str(store)], tmp_path)
    first = said.stdout.splitlines()[0]
    assert said.returncode == 0 and first.startswith(f"Compared in run {newer.run_id} (protocol standard, eps 8/255")
    assert "the newest finished run that evaluated both; 1 older run(s) of the same kind" in first
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

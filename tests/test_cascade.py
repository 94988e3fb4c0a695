"""--cascade: AutoAttack's order and semantics, its robust examples, its cost."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch
from pyautoattack import AutoAttack

import robeval
from robeval.api import evaluate_full
from robeval.data.digits import digits_split
from robeval.report.paper import render

from .conftest import one_line_error

AA = ["apgd-ce", "apgd-t", "fab-t", "square"]
SHORT = {"apgd-ce": {"n_iter": 10}, "apgd-t": {"n_iter": 10}, "fab-t": {"n_iter": 10}, "square": {"n_queries": 100}}


def robust_examples(records, attack: str) -> set[int]:
    rows = records[(records["attack"] == attack) & records["adv_top1"].astype(bool)]
    return set(rows["example"].tolist())


@pytest.fixture(scope="module")
def cascade_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("cascade")
    return evaluate_full(models="digits-deit", eps="8/255", n_examples=100, attacks=",".join(AA), settings=SHORT,
                         cascade=True, out=out / "o")


def test_the_cascade_leaves_robust_what_autoattack_leaves_robust(cascade_run):
    """Same images, batch (all 100 in one) and seed: AutoAttack's run_standard_evaluation, its four
    attacks at the same budgets, leaves exactly the same examples robust."""
    examples = sorted(cascade_run.records["example"].unique().tolist())
    images, labels = digits_split("test")
    x, y = torch.from_numpy(images[examples]), torch.from_numpy(labels[examples])
    model = robeval.load_model("digits-deit")
    adversary = AutoAttack(model, attacks=AA, eps=8 / 255, norm="Linf", seed=0, version="custom")
    adversary.verbose = False
    adversary.apgd.n_restarts = 1
    adversary.apgd.n_iter = adversary.apgd_targeted.n_iter = adversary.fab.n_iter = 10
    adversary.square.n_queries = 100
    x_adv, _ = adversary.run_standard_evaluation(x, y, batch_size=128)
    with torch.no_grad():
        theirs = {e for e, ok in zip(examples, (model(x_adv).argmax(1) == y).tolist()) if ok}
    ours = robust_examples(cascade_run.records, "square")
    assert ours == theirs and 0 < len(ours) < 100


def test_each_row_is_the_robust_accuracy_after_it_and_skipped_examples_spend_nothing(cascade_run):
    s = cascade_run.summary.set_index("attack")
    top1 = [s.loc[a, "top1"] for a in ["clean", *AA]]
    assert top1 == sorted(top1, reverse=True) and s.loc["any", "top1"] == s.loc["square", "top1"]
    rec = cascade_run.records
    for earlier, later in zip(AA, AA[1:]):
        fooled = set(rec["example"]) - robust_examples(rec, earlier)
        spent = rec[(rec["attack"] == later) & rec["example"].isin(fooled)]
        assert (spent["forward_passes"] == 0).all() and not spent["adv_top1"].any()
    ran = rec[rec["attack"].isin(AA) & (rec["forward_passes"] > 0)]  # each its own count (no column aliased)
    assert len(ran) and (ran["forward_passes"] > ran["backward_passes"]).all()
    run = json.loads((cascade_run.files["json"]).read_text())
    attacked = run["examples_attacked"]
    assert attacked["digits-deit|8/255|apgd-t"] == len(robust_examples(rec, "apgd-ce"))
    assert "AutoAttack's own draws" in run["randomness"]["apgd-ce"]
    table = render(cascade_run.summary, "md")
    assert "cascade (as AutoAttack)" in table and "apgd-ce > apgd-t > fab-t > square" in table


def test_per_example_attacks_give_the_full_runs_worst_case():
    kw = dict(models="digits-deit", eps="8/255", n_examples=60, attacks="fgsm,pgd,spsa",
              settings={"pgd": {"steps": 5}, "spsa": {"iterations": 5, "samples": 8}})
    full = evaluate_full(**kw).records
    cascade = evaluate_full(**kw, cascade=True).records
    full_any = set(full["example"])
    for attack in ("fgsm", "pgd", "spsa"):
        full_any &= robust_examples(full, attack)
    full_any &= robust_examples(full, "clean")
    assert robust_examples(cascade, "spsa") == full_any
    attacked = cascade.groupby("attack")["forward_passes"].apply(lambda p: int((p > 0).sum()))
    assert attacked["spsa"] < attacked["fgsm"] <= 60


def test_a_resumed_cascade_run_gives_the_records_of_an_uninterrupted_one(tmp_path):
    from .test_shifts import RECORD_KEY, StopAfter

    kw = dict(models="digits-deit", eps="8/255", n_examples=20, batch_size=10, attacks="fgsm,pgd,apgd-ce",
              settings={"pgd": {"steps": 3}, "apgd-ce": {"n_iter": 3}}, cascade=True)
    reference = evaluate_full(**kw).records
    store = str(tmp_path / "s.sqlite")
    with pytest.raises(KeyboardInterrupt) as stopped:
        evaluate_full(**kw, store=store, reporter=StopAfter(4))  # the second batch stops after its fgsm
    resumed = evaluate_full(**kw, store=store, resume=stopped.value.run_id).records
    a, b = (r.drop(columns="run_id").sort_values(RECORD_KEY).reset_index(drop=True) for r in (reference, resumed))
    pd.testing.assert_frame_equal(a, b)


def test_minimum_norm_attacks_are_refused_under_the_cascade(cli):
    result = cli("run", "-n", "4", "--attacks", "pgd,fmn", "--cascade")
    assert result.returncode == 2 and one_line_error(result, "--cascade", "fmn")

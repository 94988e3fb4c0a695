"""Minimum-norm attacks (FMN from foolbox, FAB in its minimum-norm mode): one search per batch gives
robust accuracy at every eps, stored per example, drawn as a curve and checked against the fixed-eps
attacks of the same run."""

from __future__ import annotations

import json
import math
import sqlite3

import numpy as np
import pandas as pd
import pytest
import torch

import robeval
from robeval.api import evaluate_full
from robeval.attacks import create
from robeval.attacks.minimum_norm import _fixed_l2_fmn, search_norms, within_eps
from robeval.data.digits import digits_split
from robeval.report.checklist import Soundness
from robeval.report.paper import render
from robeval.report.plots import curve, make_plots
from robeval.results.indicators import noise_points
from robeval.results.soundness import JudgedRun, judge_summary, run_findings
from robeval.store import Store, StoredRun
from robeval.store.schema import MIGRATIONS, SCHEMA_VERSION

EPS = ["2/255", "4/255", "8/255", "16/255"]


@pytest.fixture(scope="module")
def fmn_run(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("mn") / "s.sqlite")
    result = evaluate_full(models="digits-deit", attacks="pgd,fmn", eps=",".join(EPS), n_examples=100, store=store)
    return result, store


def test_one_search_serves_every_eps_and_is_stored_per_example(fmn_run):
    result, _ = fmn_run
    fmn = result.records[result.records["attack"] == "fmn"]
    per_example = fmn.pivot(index="example", columns="eps", values="min_norm")
    assert per_example.notna().all().all() and per_example.nunique(axis=1).max() == 1  # the same search under every eps
    assert result.records[result.records["attack"] != "fmn"]["min_norm"].isna().all()
    norms = per_example.iloc[:, 0].to_numpy()
    summary = result.summary.set_index(["attack", "eps"])
    for eps in EPS:
        value = summary.loc[("fmn", eps), "eps_value"]
        assert summary.loc[("fmn", eps), "top1"] == pytest.approx(curve(norms, [value])[0])  # records = the curve
        at_eps = fmn[fmn["eps"] == eps]
        assert (at_eps["linf"] <= value + 1e-6).all()  # eps-checked like every attack
    clean = result.records[(result.records["attack"] == "clean") & (result.records["eps"] == EPS[0])]
    assert ((norms == 0) == ~clean.sort_values("example")["clean_top1"].to_numpy()).all()


def test_the_curve_is_non_increasing_and_never_above_fixed_eps_pgd_beyond_noise(fmn_run):
    result, _ = fmn_run
    norms = result.records[(result.records["attack"] == "fmn") & (result.records["eps"] == EPS[0])]["min_norm"]
    values = curve(norms, np.linspace(0, 64 / 255, 300))
    assert (np.diff(values) <= 0).all() and values[0] > 90 and values[-1] == 0
    top1 = result.summary.set_index(["attack", "eps"])["top1"]
    for eps in EPS:
        assert top1[("fmn", eps)] <= top1[("pgd", eps)] + noise_points(top1[("pgd", eps)], 100), eps
    assert not [f for f in run_findings(result.summary, result.info, result.records)["flags"] if f["check"] == "minimum-norm-mismatch"]


def test_tables_plot_and_json_report_the_minimum_norm_search(fmn_run, tmp_path):
    result, store = fmn_run
    md = render(result.summary, "md")
    block = md.split("Table: Minimum-norm attacks")[1]
    assert "| Model | FMN median size | FMN Top-1 @ 2/255 |" in block and "/255 |" in block.split("| digits-deit |")[1]
    rows = json.loads(render(result.summary, "json"), parse_constant=lambda c: pytest.fail(f"non-standard JSON {c}"))
    assert all(r["median_min_norm"] is None for r in rows if r["attack"] != "fmn")
    from robeval.results.runs import combine, resolve_runs
    from robeval.results.runs import minimal_norms as stored_norms

    runs = resolve_runs(store, [result.run_id])
    norms = stored_norms(runs)
    assert len(norms) == 100 and set(norms["attack"]) == {"fmn"}
    paths = make_plots(combine(runs), tmp_path, norms)
    assert (tmp_path / "robust_top1_vs_min_norm.png").stat().st_size > 1000 and len(paths) >= 4


def test_a_search_that_stops_early_and_fixed_eps_attacks_that_miss_are_both_flagged():
    def summary(fmn: float, pgd: float) -> pd.DataFrame:
        return pd.DataFrame([dict(model="m", eps="8/255", eps_value=8 / 255, attack=a, top1=v, n=400)
                             for a, v in (("clean", 99.0), ("pgd", pgd), ("fmn", fmn))])

    (weaker,) = run_findings(summary(60.0, 40.0), {})["flags"]
    assert weaker["check"] == "minimum-norm-mismatch" and "fmn stopped early: raise its budget" in weaker["advice"]
    (missed,) = run_findings(summary(20.0, 40.0), {})["flags"]
    assert missed["check"] == "minimum-norm-mismatch" and "pgd missed fooling points that fmn found" in missed["advice"]
    assert not run_findings(summary(41.0, 40.0), {})["flags"]
    run = StoredRun("r", {}, {"protocol": "standard"}, pd.DataFrame(), summary(60.0, 40.0))
    text = Soundness(JudgedRun(run, [], judge_summary(run.summary))).render("checklist")
    assert "| Minimum-norm curve meets the fixed-eps attacks |" in text and "| RAISED | eps 8/255: fmn 60.00 vs pgd 40.00" in text


def test_fab_minimum_norm_finds_fooling_points_and_bounds_them_per_eps():
    model = robeval.load_model("digits-deit")
    x, y = (torch.from_numpy(a[:24]) for a in digits_split("test"))
    attack = create("fab-mn", model, eps=8 / 255, n_iter=20)
    points = attack.find_points(x, y)
    with torch.no_grad():
        clean_pred, pred = model(x).argmax(1), model(points).argmax(1)
    norms = search_norms(x, points, clean_pred, pred, y, "Linf")
    found = torch.isfinite(norms) & (norms > 0)
    assert found.sum() >= 20 and (pred[found] != y[found]).all()
    for eps in (4 / 255, 16 / 255):
        bounded = within_eps(x, points, norms, eps)
        assert (bounded - x).abs().amax() <= eps + 1e-7
        with torch.no_grad():
            assert (model(bounded).argmax(1) == y).float().mean() == pytest.approx(((norms > eps).float()).mean())


def test_l2_fmn_projects_where_foolbox_does_not():
    import eagerpy as ep

    x0 = ep.astensor(torch.zeros(3, 1, 8, 8))
    x = ep.astensor(torch.randn(3, 1, 8, 8))
    radius = ep.astensor(torch.tensor([0.5, 1.0, 100.0]))
    projected = _fixed_l2_fmn()(steps=1).project(x, x0, radius).raw
    norms = projected.flatten(1).norm(dim=1)
    assert torch.allclose(norms[:2], torch.tensor([0.5, 1.0]), atol=1e-5)
    assert torch.allclose(projected[2], x.raw[2])  # inside the ball: unchanged
    model = robeval.load_model("digits-deit")
    xs, ys = (torch.from_numpy(a[:16]) for a in digits_split("test"))
    adv = create("fmn", model, eps=1.0, norm="L2", steps=10)(xs, ys)
    assert ((adv - xs).flatten(1).norm(dim=1) <= 1.0 + 1e-5).all()


def test_a_store_of_schema_1_gains_the_column_and_reads_old_records_as_missing(tmp_path):
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(MIGRATIONS[0] + ";PRAGMA user_version = 1;")
    conn.execute("INSERT INTO runs (id, created, status, protocol, config, info) VALUES ('r', 'now', 'finished', "
                 "'standard', '{}', '{}')")
    conn.execute("INSERT INTO records VALUES ('r', 'm', 'pgd', '8/255', 0.03, 0, 1, 3, 1, 1, 0, 1, 5, 0.03, 0.5, 21, 20)")
    conn.commit()
    conn.close()
    records = Store(path).records("r")
    assert len(records) == 1 and math.isnan(records["min_norm"].iloc[0])
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_check_run_missing_makes_the_large_eps_run(tmp_path):
    from .conftest import run_cli

    store = str(tmp_path / "s.sqlite")
    assert run_cli("run", "-m", "digits-deit", "--attacks", "pgd", "-n", "20", "--eps", "8/255", "--quiet",
                   "--store", store).returncode == 0
    before = run_cli("check", "--store", store, "--report", str(tmp_path / "a.md"))
    assert "| Accuracy reaches 0 at a large eps | Carlini et al. checklist (an unbounded attack must succeed always) | not run |" \
        in (tmp_path / "a.md").read_text() and before.returncode == 0
    completed = run_cli("check", "--store", store, "--report", str(tmp_path / "b.md"), "--run-missing")
    assert completed.returncode == 0, completed.stderr
    text = (tmp_path / "b.md").read_text()
    assert "| ok | lowest fixed-eps white-box top-1 at eps >= 64/255: 0.00%" in text
    assert "(PGD at 16/255, 64/255, same models and examples)" in text
    alone = run_cli("check", "--store", store, "--run-missing")
    assert alone.returncode != 0 and "name the report file too" in alone.stderr


def test_minimum_norm_attacks_refuse_a_normalized_space_protocol():
    from .conftest import run_cli

    proc = run_cli("run", "-m", "digits-deit", "--attacks", "fmn", "--protocol", "nielsen2024", "-n", "4", "--quiet")
    assert proc.returncode == 2 and "fmn measures perturbations in the [0,1] pixel box" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1

"""Convergence curves (robust top-1 along an attack's iterations or queries): read from the forward
passes the attacks make anyway, stored with the records, ending where the records end, drawn by
``robeval plot``, and judged by the "attack converged" flag and checklist indicator."""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest
import torch

from robeval.api import evaluate_full
from robeval.attacks import create, list_attacks
from robeval.attacks.convergence import CURVE_POINTS, CurveWatch, grid, reading, robust_along
from robeval.core.errors import UserError
from robeval.data.digits import digits_split
from robeval.models import load_model, register_model
from robeval.models.catalog import DIGITS, DIGITS_CFG
from robeval.models.registry import MODELS as MODEL_REGISTRY
from robeval.models.weights import NO_WEIGHTS
from robeval.report.plots import convergence_figure
from robeval.report.style import svg_text
from robeval.results.convergence import curves, standard_error, still_falling, summed
from robeval.results.indicators import converged
from robeval.results.runs import load_run
from robeval.results.soundness import run_findings
from robeval.store import Store
from robeval.store.schema import SCHEMA_VERSION

from .conftest import FAST_SETTINGS

CURVE_ATTACKS = [s.name for s in list_attacks() if s.cls.curve_axis]
RETURN_THEIR_BEST = [a for a in CURVE_ATTACKS if a != "pgd"]  # PGD returns its last iterate
CHEAP = {**FAST_SETTINGS, "pgd": {"steps": 5}}


def test_the_attacks_with_a_curve_are_those_of_the_issue():
    assert set(CURVE_ATTACKS) == {"pgd", "apgd-ce", "apgd-t", "apgd-dlr", "spsa", "square", "apgd-t-malt", "apgd-t-rest"}
    assert {s.name: s.cls.curve_axis for s in list_attacks() if s.cls.curve_axis}["square"] == "queries"


@pytest.fixture(scope="module")
def digits_batch():
    x, y = digits_split("test")
    return load_model("digits-deit"), torch.from_numpy(x[:16]), torch.from_numpy(y[:16])


@pytest.mark.parametrize("attack", CURVE_ATTACKS)
def test_watching_an_attack_changes_nothing_it_returns(attack, digits_batch):
    model, x, y = digits_batch
    settings = CHEAP.get(attack, {})
    plain = create(attack, model, 8 / 255, seed=5, **settings)
    spec = next(s for s in list_attacks() if s.name == attack)
    watched = create(attack, CurveWatch.for_attack(model, spec.cls, settings), 8 / 255, seed=5, **settings)
    examples = list(range(16))
    with reading(watched.model, y) as fooling:
        points = watched(x, y, seed=7, examples=examples)
    assert torch.equal(plain(x, y, seed=7, examples=examples), points)
    assert fooling is not None and len(fooling.first) == 16 and fooling.first.isfinite().any()


def test_the_pgd_curve_is_the_running_best_of_its_iterates(digits_batch):
    """Iterate k is seen at position k, the last iterate (5) by the records' pass: the curve's end counts
    the examples no iterate fooled, at most the records' robust count (PGD keeps its last iterate)."""
    model, x, y = digits_batch
    seen: list[torch.Tensor] = []
    hook = model.register_forward_hook(lambda _m, _i, out: seen.append(out.detach().argmax(1)))
    pgd = create("pgd", CurveWatch(model), 8 / 255, seed=1, steps=5)  # read from outside: no mark of its own
    try:
        with reading(pgd.model, y) as fooling:
            x_adv = pgd(x, y)
    finally:
        hook.remove()
    robust = model(x_adv).argmax(1) == y
    fooled_by = torch.stack([p != y for p in seen] + [~robust])  # [iterate 0..5, example]
    expected = [int((~fooled_by[: p + 1].any(0)).sum()) for p in grid(5)]
    assert robust_along([fooling], 5, robust) == expected
    assert expected[-1] <= int(robust.sum())


@pytest.fixture(scope="module")
def curve_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("curves") / "store.sqlite"
    result = evaluate_full(models=["digits-deit"], n_examples=24, batch_size=16, eps="8/255", seed=3,
                           attacks=",".join(CURVE_ATTACKS), settings=CHEAP, store=str(path))
    return path, result


def test_curves_are_stored_per_unit_and_end_at_the_records(curve_run):
    path, result = curve_run
    stored = Store(path)
    points = stored.curves(result.run_id)
    pd.testing.assert_frame_equal(points, result.curves.drop(columns="run_id"))
    assert len(points) == len(CURVE_ATTACKS) * 2 * (CURVE_POINTS + 1)  # two batches of each attack
    for (attack, batch), unit in points.groupby(["attack", "batch"]):
        robust = unit.sort_values("point")["robust"].tolist()
        assert robust == sorted(robust, reverse=True), attack  # a running best never rises
        records = result.records[(result.records["attack"] == attack) & (result.records["batch"] == batch)]
        assert set(unit["examples"]) == {len(records)}
        end = int(records["adv_top1"].sum())
        assert robust[-1] == end if attack in RETURN_THEIR_BEST else robust[-1] <= end, attack
    frame = curves(stored, result.run_id)
    final = frame[frame["point"] == CURVE_POINTS].set_index("attack")["robust_top1"]
    top1 = result.summary.set_index("attack")["top1"]
    assert all(abs(final[a] - top1[a]) < 0.006 for a in RETURN_THEIR_BEST)  # the summary rounds to 2 places
    assert frame.loc[frame["attack"] == "square", "position"].max() == FAST_SETTINGS["square"]["n_queries"] + 1
    assert set(frame.loc[frame["attack"] == "apgd-t", "axis"]) == {"iterations"}


def test_a_stored_run_reads_its_curves_back(curve_run):
    path, result = curve_run
    run = load_run(Store(path), result.run_id)
    columns = ["attack", "curve_robust_90", "curve_robust_end", "curve_examples"]
    pd.testing.assert_frame_equal(run.summary[columns], result.summary[columns])
    assert run.summary.set_index("attack").loc["pgd", "curve_examples"] == 24
    pd.testing.assert_frame_equal(curves(path, result.run_id), curves(Store(path), result.run_id))
    with pytest.raises(UserError, match="no run 'nope'"):
        curves(path, "nope")


def test_the_cascade_curve_of_each_attack_starts_where_the_last_one_ended():
    attacks = ["apgd-ce", "apgd-t", "square"]
    result = evaluate_full(models=["digits-deit"], n_examples=24, eps="8/255", seed=3, attacks=",".join(attacks),
                           settings=CHEAP, cascade=True)
    frame = summed(result.curves.drop(columns="run_id")).set_index(["attack", "point"])
    robust = result.records.groupby("attack")["adv_top1"].sum()
    start = int(result.records[result.records["attack"] == "clean"]["clean_top1"].sum())
    for attack in attacks:
        assert frame.loc[(attack, 0), "examples"] == 24  # the whole batch: the others count as fooled
        assert frame.loc[(attack, 0), "robust"] == start
        start = int(frame.loc[(attack, CURVE_POINTS), "robust"])
        assert start == robust[attack]  # the cascade's row: robust after this attack and the ones before


def test_reduced_precision_records_no_curve_and_says_why():
    result = evaluate_full(models=["digits-deit"], n_examples=4, eps="8/255", attacks="pgd",
                           settings={"pgd": {"steps": 1}}, precision="bf16")
    assert result.curves.empty and result.summary["curve_robust_90"].isna().all()
    found = converged("digits-deit", result.summary, None)
    assert found.status == "not run" and "--precision bf16" in found.evidence


def test_a_store_of_schema_4_opens_and_its_runs_read_back(curve_run, tmp_path):
    path, result = curve_run
    old = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as source, sqlite3.connect(old) as target:
        source.backup(target)
    with sqlite3.connect(old) as conn:
        conn.execute("DROP TABLE curves")
        conn.execute("PRAGMA user_version = 4")
    store = Store(old)
    assert store.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    run = load_run(store, result.run_id)
    assert store.curves(result.run_id).empty and run.summary["curve_robust_90"].isna().all()
    pd.testing.assert_frame_equal(run.records, result.records.drop(columns="run_id"))
    found = converged("digits-deit", run.summary, None)
    assert found.status == "not run" and "stored before curves were recorded" in found.evidence


def test_a_worker_store_merges_its_curves(curve_run, tmp_path):
    path, result = curve_run
    run_id = result.run_id
    main = Store(tmp_path / "main.sqlite")
    main.ensure_run(run_id, {}, "standard")
    assert main.merge_from(path, run_id) == len(Store(path).done_units(run_id))
    pd.testing.assert_frame_equal(main.curves(run_id), result.curves.drop(columns="run_id"))


@pytest.fixture()
def centroids():
    """A nearest-class-mean classifier on the digits: linear, so each PGD step of 0.25 eps moves every
    margin by the same amount until the eps ball is filled (8 steps from a random start)."""
    x, y = digits_split("train")
    mean, std = DIGITS_CFG["mean"][0], DIGITS_CFG["std"][0]
    flat = (torch.from_numpy(x).flatten(1) - mean) / std
    centre = torch.stack([flat[torch.from_numpy(y) == c].mean(0) for c in range(10)])

    @register_model("toy-centroids", family="toy", weights=NO_WEIGHTS, config=DIGITS, description="nearest class mean")
    def build():
        net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
        with torch.no_grad():
            net[1].weight.copy_(centre)
            net[1].bias.copy_(-(centre**2).sum(1) / 2)
        net.pretrained_cfg = dict(DIGITS_CFG)
        return net

    yield "toy-centroids"
    MODEL_REGISTRY.remove("toy-centroids")


def test_pgd_with_5_steps_has_not_converged_on_a_linear_model(centroids):
    def run(steps: int):
        return evaluate_full(models=[centroids], weights="random", n_examples=150, eps="48/255", attacks="pgd",
                             settings={"pgd": {"steps": steps}}).summary

    short = run(5)
    flags = convergence_flags(short)
    assert len(flags) == 1 and "--set pgd.steps=10" in flags[0]["advice"]
    assert converged(centroids, short, None).status == "RAISED"
    long = run(20)
    assert convergence_flags(long) == [] and converged(centroids, long, None).status == "ok"


def convergence_flags(summary: pd.DataFrame) -> list[dict]:
    return [f for f in run_findings(summary, {})["flags"] if f["check"] == "not-converged"]


@pytest.mark.parametrize("start, end, n, falling", [
    (100, 99, 100, False),  # one example at 100% robust: the plain standard error is 0, and one example never counts
    (10_000, 9_999, 10_000, False),
    (3, 2, 3, False),
    (100, 98, 100, True),
    (70, 60, 100, True),
    (70, 67, 100, False),  # 3 points: within a standard error of 70% of 100 (4.5 points)
    (5, 0, 100, False),  # ends at 0: nothing left to fool
])  # fmt: skip
def test_the_noise_test_never_passes_on_one_example(start, end, n, falling):
    assert still_falling(start, end, n) is falling
    assert standard_error(start, n) >= 1e-4


# apgd-t-malt and apgd-t-rest run APGD-T's iterations on a part of its targets: apgd-t's curve stands for theirs
DEMO_CURVES = [a for a in CURVE_ATTACKS if a not in ("apgd-dlr", "apgd-t-malt", "apgd-t-rest")]


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """The demo models at the demo's eps with every curve attack at its defaults (few examples: Square's
    5,000 queries and SPSA's samples are most of the suite's time here)."""
    path = tmp_path_factory.mktemp("demo") / "store.sqlite"
    result = evaluate_full(models=["digits-deit", "digits-deit-elliptical"], n_examples=10, eps="8/255",
                           attacks=",".join(DEMO_CURVES), store=str(path))
    return path, result


def test_the_default_settings_converge_on_the_demo_models(demo_run):
    _, result = demo_run
    assert result.summary["curve_robust_90"].notna().sum() == 2 * len(DEMO_CURVES)
    assert convergence_flags(result.summary) == []
    for model in ("digits-deit", "digits-deit-elliptical"):
        assert converged(model, result.summary[result.summary["model"] == model], None).status == "ok"


def test_robeval_plot_draws_the_curves(demo_run, tmp_path):
    from .conftest import run_cli

    path, result = demo_run
    frame = curves(Store(path), result.run_id)
    fig = convergence_figure(frame)
    assert len(fig.axes) == len(DEMO_CURVES) and fig.legends and not any(ax.get_legend() for ax in fig.axes)  # legend outside
    lines = fig.axes[0].get_lines()
    assert [line.get_label() for line in lines] == ["digits-deit", "digits-deit-elliptical"]
    assert lines[0].get_marker() != lines[1].get_marker()
    assert svg_text(convergence_figure(frame)).startswith("<svg") and convergence_figure(frame.iloc[0:0]) is None
    done = run_cli("plot", result.run_id, "--store", str(path), "--out", str(tmp_path / "plots"))
    assert done.returncode == 0, done.stderr
    assert {p.name for p in (tmp_path / "plots").glob("robust_top1_vs_iterations.*")} >= {
        "robust_top1_vs_iterations.png",
        "robust_top1_vs_iterations.svg",
    }


def test_curves_come_in_the_run_order_of_its_models():
    from robeval.results.convergence import in_run_order

    frame = pd.DataFrame({"model": ["a-model", "a-model", "z-model"], "point": [0, 1, 0]})  # the store: by name
    ordered = in_run_order(frame, ["z-model", "a-model"])
    assert list(dict.fromkeys(ordered["model"])) == ["z-model", "a-model"] and list(ordered["point"]) == [0, 0, 1]


def test_reading_curves_from_a_missing_store_creates_nothing(tmp_path):
    from robeval.core.errors import UserError
    from robeval.results.convergence import curves

    with pytest.raises(UserError, match="results store not found"):
        curves(tmp_path / "missing.sqlite", "some-run")
    assert not (tmp_path / "missing.sqlite").exists()

"""A model of several members (checkpoints, one per training seed): every member runs every attack on the
same examples with the same seeds, so its records are those of a run of that checkpoint alone; tables
show the mean over members ± their sample std; ``compare`` tests a difference of means against the
seed-to-seed variation; resume, workers and paper tables treat members as they treat models."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.stats import norm

import robeval
from robeval.api import evaluate_full
from robeval.core.errors import UserError
from robeval.results.statistics import claim_interval
from robeval.store import Store

from .conftest import one_line_error, run_cli
from .reference_runs import StopAfter, bitwise_equal

ZOO = Path(robeval.__file__).parent / "zoo"
SETTINGS = {"pgd": {"steps": 5}, "square": {"n_queries": 30}, "spsa": {"iterations": 3, "samples": 4}}
RUN = dict(n_examples=20, batch_size=10, attacks="fgsm,pgd,square,spsa", settings=SETTINGS, seed=3, threads=1)


def moved_member(model: str, seed: int, path: Path) -> Path:
    """``model``'s shipped weights (seed 0), or a genuinely different variant of them (moved by noise of
    ``seed``), written to ``path``: a member of its own."""
    from safetensors.torch import load_file, save_file

    state = load_file(str(ZOO / f"{model}.safetensors"))
    generator = torch.Generator().manual_seed(seed)
    moved = {
        k: v + 0.15 * v.std() * torch.randn(v.shape, generator=generator) if seed and v.numel() > 1 else v
        for k, v in state.items()
    }
    save_file({k: v.contiguous() for k, v in moved.items()}, str(path))
    return path


@pytest.fixture(scope="module")
def members(tmp_path_factory) -> list[Path]:
    """digits-deit's shipped weights and two genuinely different variants (its weights moved by seeded noise)."""
    folder = tmp_path_factory.mktemp("seeds")
    return [moved_member("digits-deit", seed, folder / f"digits-deit-seed{seed}.safetensors") for seed in range(3)]


@pytest.fixture(scope="module")
def three(members, tmp_path_factory):
    """A stored run of digits-deit with the three members and digits-deit-elliptical with one."""
    store = tmp_path_factory.mktemp("run") / "s.sqlite"
    run = evaluate_full(models=["digits-deit", "digits-deit-elliptical"],
                        checkpoints={"digits-deit": [str(p) for p in members]}, store=str(store), **RUN)  # fmt: skip
    return run, store


def own(records: pd.DataFrame) -> pd.DataFrame:
    return records.drop(columns=[c for c in ("run_id", "member") if c in records]).reset_index(drop=True)


def test_every_member_record_equals_the_record_of_a_run_of_that_checkpoint_alone(three, members):
    run, _ = three
    records = run.records[run.records["model"] == "digits-deit"]
    assert sorted(set(records["member"])) == [0, 1, 2]
    for member, path in enumerate(members):
        alone = evaluate_full(models=["digits-deit"], checkpoints={"digits-deit": str(path)}, **RUN).records
        assert set(alone["member"]) == {0}
        assert bitwise_equal(own(alone), own(records[records["member"] == member])) is None
    predictions = records.pivot_table(index=["attack", "example"], columns="member", values="adv_pred")
    assert (predictions[0] != predictions[1]).any() and (predictions[0] != predictions[2]).any()  # other weights
    facts = run.info["models"]["digits-deit"]["members"]
    assert [f["checkpoint"] for f in facts] == [str(p) for p in members]
    assert len({f["checkpoint_sha256"] for f in facts}) == 3 and "members" not in run.info["models"]["digits-deit-elliptical"]


def test_the_table_is_the_mean_and_sample_std_over_members_and_any_is_each_members_worst_case(three):
    run, _ = three
    records, summary = run.records, run.summary.set_index(["model", "attack"])
    ours = records[records["model"] == "digits-deit"]
    per_member = ours.groupby(["attack", "member"])["adv_top1"].mean().unstack() * 100
    worst = ours[ours["attack"] != "clean"].groupby(["member", "example"])["adv_top1"].min().groupby("member").mean()
    per_member.loc["any"] = worst * 100  # each member's own worst case, then the mean over members
    for attack, values in per_member.iterrows():
        row = summary.loc[("digits-deit", attack)]
        assert row["top1"] == pytest.approx(round(float(np.mean(values)), 2))
        assert row["top1_std"] == pytest.approx(round(float(np.std(values, ddof=1)), 2))
        assert row["member_top1"] == pytest.approx([round(v, 2) for v in values]) and row["members"] == 3
    single = summary.loc[("digits-deit-elliptical", "pgd")]
    assert single["members"] == 1 and math.isnan(single["top1_std"])
    md = run.table("md")
    assert "±" in md and "digits-deit: 3, digits-deit-elliptical: 1" in md
    line = next(r for r in md.splitlines() if r.startswith("| digits-deit-elliptical"))
    assert "±" not in line  # a model of one member prints as it always did


def test_a_run_of_one_member_per_model_has_the_columns_it_always_had(members):
    run = evaluate_full(models=["digits-deit"], checkpoints={"digits-deit": str(members[1])}, n_examples=10,
                        attacks="fgsm", threads=1)  # fmt: skip
    assert not {"members", "top1_std", "member_top1"} & set(run.summary.columns)
    assert run.info["config"]["checkpoints"] == {"digits-deit": str(members[1])} and "±" not in run.table("md")


def test_compare_tests_the_difference_of_the_means_against_the_seed_spread(three):
    run, store = three
    found = run.compare("digits-deit-elliptical", "digits-deit")
    assert found.test == "members" and set(found.table["members_a"]) == {1} and set(found.table["members_b"]) == {3}
    row = found.table.set_index("attack").loc["any"]
    assert row["top1_low"] < row["top1_diff"] < row["top1_high"]
    text = found.render("md")
    assert "within the seed-to-seed variation" in text or "exceeds the seed-to-seed variation" in text
    assert "has one checkpoint: its seed-to-seed variation is taken to be the other model's" in text
    printed = run_cli("compare", "digits-deit", "digits-deit-elliptical", "--store", str(store))
    assert printed.returncode == 0 and "Comparison of training procedures" in printed.stdout


def test_the_claim_interval_covers_the_true_difference_of_training_procedures():
    """Simulated: members whose accuracy varies by seed (3 points), 100 examples shared by all (each
    member's own chance on an example too), no true difference; 300 repeats.  The interval's coverage is
    near its 95%, where a bootstrap over 3 members and the examples misses when seeds vary more."""
    rng = np.random.default_rng(0)

    def side(shared, k=3, mean=0.7, seed_sd=0.03):
        p = np.clip(mean + seed_sd * rng.standard_normal(k), 0.01, 0.99)
        u = norm.cdf(0.8 * shared + 0.6 * rng.standard_normal((k, len(shared))))
        return (u < p[:, None]).astype(float)

    covered = []
    for _ in range(300):
        shared = rng.standard_normal(100)
        found = claim_interval(side(shared), side(shared))
        covered.append(found["low"] <= 0 <= found["high"])
    assert 0.92 <= np.mean(covered) <= 0.99
    shared = rng.standard_normal(100)
    a, b = side(shared, mean=0.6), side(shared, mean=0.9)
    assert claim_interval(a, b)["low"] > 0  # 30 points with a 3-point seed spread: beyond it


def test_one_member_each_is_the_paired_comparison_and_says_the_claim_rests_on_one_checkpoint(tmp_path):
    run = evaluate_full(models=["digits-deit", "digits-deit-elliptical"], n_examples=10, attacks="fgsm", threads=1)
    found = run.compare("digits-deit", "digits-deit-elliptical")
    assert found.test == "paired" and "top1_mcnemar_p" in found.table
    assert "The claim rests on one checkpoint each" in str(found)
    checked = run.check()
    assert not [f for f in checked.flags if f.check == "one-checkpoint"]  # a caveat on the claim, not a flag
    (caveat,) = [f for f in checked.caveats if f.check == "one-checkpoint" and f.model == "digits-deit"]
    assert "one checkpoint" in caveat.evidence and "--checkpoint NAME=A,B,C" in caveat.advice
    said = str(checked)
    assert "Soundness checks: no flags" in said and "Caveats on the claim (no sign of a failed attack): 1" in said
    assert "  [one-checkpoint] digits-deit, digits-deit-elliptical: one checkpoint" in said


def test_the_check_of_several_checkpoints_is_ok_with_members_and_na_alone(three, members):
    run, _ = three
    judged = {(f.model, f.check): f for one in run.check().judged.models for f in one.findings}
    assert judged[("digits-deit", "one-checkpoint")].status == "ok"
    assert judged[("digits-deit-elliptical", "one-checkpoint")].status == "CAVEAT"
    alone = evaluate_full(models=["digits-deit"], n_examples=10, attacks="fgsm", threads=1).check()
    assert next(f for f in alone.judged.models[0].findings if f.check == "one-checkpoint").status == "n/a"


def test_a_resume_in_the_middle_of_the_second_member_gives_the_records_of_one_run(members, tmp_path):
    options = dict(models=["digits-deit"], checkpoints={"digits-deit": [str(p) for p in members[:2]]},
                   n_examples=20, batch_size=10, attacks="fgsm,square", settings=SETTINGS, seed=3, threads=1)  # fmt: skip
    path = tmp_path / "s.sqlite"
    with pytest.raises(KeyboardInterrupt):
        evaluate_full(store=str(path), reporter=StopAfter(6), **options)  # 4 attack units a member
    store = Store(path)
    run_id = store.runs()["id"].iloc[-1]
    members = [k for *_, k in store.done_units(run_id)]
    assert members.count(0) == 6 and members.count(1) == 3  # the second member's first batch only
    store.close()
    partial = robeval.open_run(run_id, store=path).summary.set_index("attack")
    assert partial.loc["fgsm", "status"] == "partial" and partial.loc["fgsm", "batches"] == "3/4"
    resumed = evaluate_full(store=str(path), resume=run_id, **options)
    whole = evaluate_full(**options)
    assert resumed.run_id == run_id and bitwise_equal(own(whole.records), own(resumed.records)) is None
    assert resumed.records["member"].tolist() == whole.records["member"].tolist()


def test_two_workers_with_members_store_what_one_process_stores(members, tmp_path):
    args = ["run", "-m", "digits-deit", "-c", f"digits-deit={members[0]},{members[2]}", "-n", "20",
            "--batch-size", "10", "--attacks", "fgsm,pgd", "--set", "pgd.steps=3", "--threads", "1", "--quiet"]  # fmt: skip
    both = subprocess.run([sys.executable, "-m", "robeval", *args, "--nproc", "2", "--store", str(tmp_path / "w.sqlite"),
                           "--out", str(tmp_path / "w")], capture_output=True, text=True, cwd=tmp_path, timeout=600)  # fmt: skip
    assert both.returncode == 0, both.stderr
    one = run_cli(*args, "--store", str(tmp_path / "o.sqlite"), "--out", str(tmp_path / "o"))
    assert one.returncode == 0, one.stderr
    stored = [robeval.open_run(store=tmp_path / name).records for name in ("w.sqlite", "o.sqlite")]
    assert bitwise_equal(*(r.drop(columns="run_id") for r in stored)) is None and set(stored[0]["member"]) == {0, 1}


def test_a_run_with_members_combines_with_a_run_of_single_checkpoints(three):
    """The combined table counts a model of the other run as one member (its run has no member columns)."""
    run, store = three
    other = evaluate_full(models=["digits-rvt"], store=str(store), **RUN)
    for fmt in ("md", "latex"):
        table = run_cli("table", run.run_id, other.run_id, "--store", str(store), "-f", fmt)
        assert table.returncode == 0, table.stderr
        assert "digits-deit: 3" in table.stdout and "digits-rvt: 1" in table.stdout


def test_the_command_line_takes_a_list_or_a_glob_and_refuses_what_is_not_one_model(members, tmp_path):
    folder = members[0].parent
    glob = f"digits-deit={folder}/digits-deit-seed*.safetensors"
    run = run_cli("run", "-m", "digits-deit", "-c", glob, "-n", "10", "--attacks", "fgsm", "--quiet", "--store",
                  str(tmp_path / "s.sqlite"), "--out", str(tmp_path / "o"))  # fmt: skip
    assert run.returncode == 0, run.stderr
    info = json.loads((tmp_path / "o" / "run.json").read_text())
    assert info["config"]["checkpoints"] == {"digits-deit": [str(p) for p in members]}  # sorted
    csv = pd.read_csv(tmp_path / "o" / "results.csv")
    assert set(csv["members"]) == {3} and csv["member_top1"].str.startswith("[").all()
    table = run_cli("table", "--store", str(tmp_path / "s.sqlite"), "-f", "latex")
    assert r"\pm" in table.stdout and "digits-deit: 3" in table.stdout
    base = ["run", "-m", "digits-deit", "-n", "10", "--attacks", "fgsm", "--quiet", "--store", str(tmp_path / "x.sqlite")]
    assert one_line_error(run_cli(*base, "-c", f"digits-deit={folder}/none*.pth"), "no file matches")
    twice = run_cli(*base, "-c", f"digits-deit={members[0]}", "-c", f"digits-deit={members[1]}")
    assert one_line_error(twice, "two checkpoints for digits-deit", "--checkpoint digits-deit=A,B,C")
    assert one_line_error(run_cli(*base, "-c", f"digits-deit={members[0]},{members[0]}"), "given twice")
    assert one_line_error(run_cli(*base[:3], "-m", "digits-deit", *base[3:]), "digits-deit")  # one model given twice
    assert not (tmp_path / "x.sqlite").exists()


def test_modules_given_from_python_are_one_models_members(members):
    modules = [robeval.load_model("digits-deit", checkpoint=p).net for p in members[:2]]  # timm networks
    run = evaluate_full(models=[robeval.Members("mine", modules), "digits-deit"], n_examples=10, attacks="fgsm",
                        threads=1)  # fmt: skip
    assert list(dict.fromkeys(run.summary["model"])) == ["module:mine", "digits-deit"]
    assert set(run.records[run.records["model"] == "module:mine"]["member"]) == {0, 1}
    assert len(run.config["given_models"]["module:mine"]) == 2
    again = evaluate_full(models=[("mine", modules)], n_examples=10, attacks="fgsm", threads=1)
    assert again.summary.set_index("attack").loc["fgsm", "members"] == 2
    with pytest.raises(UserError, match="holds no module"):
        evaluate_full(models=[robeval.Members("none", [])], n_examples=10, attacks="fgsm")


def test_the_seed_spread_tables_reproduce_from_members(tmp_path):
    """Plumbing: each digits model's shipped file and a variant of it (two members of their own)."""
    kinds = ["digits-deit", "digits-deit-optimised", "digits-deit-efficient", "digits-deit-super"]
    for model in kinds:
        for seed in (0, 1):
            moved_member(model, seed, tmp_path / f"{model}-seed{seed}.safetensors")
    given = [a for m in kinds for a in ("-c", f"{m}={tmp_path}/{m}-seed*.safetensors")]
    done = run_cli("reproduce", "hosseini-std-mnist", "-n", "10", "--quiet", *given, "--store", str(tmp_path / "s.sqlite"),
                   "--out", str(tmp_path / "t"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    table = (tmp_path / "t" / "table.md").read_text()
    assert len(re.findall(r"\d ± \d+\.\d\d", table)) == 4 and "mean ± sample std of top-1 over the checkpoints" in table


def test_a_cascade_of_members_gives_each_member_the_records_of_its_own_cascade(members):
    options = dict(n_examples=20, batch_size=10, attacks="fgsm,pgd,square", settings=SETTINGS, seed=3, threads=1,
                   cascade=True)  # fmt: skip
    both = evaluate_full(models=["digits-deit"], checkpoints={"digits-deit": [str(p) for p in members[1:]]}, **options)
    for member, path in enumerate(members[1:]):
        alone = evaluate_full(models=["digits-deit"], checkpoints={"digits-deit": str(path)}, **options).records
        assert bitwise_equal(own(alone), own(both.records[both.records["member"] == member])) is None


def test_the_report_shows_every_members_figures_and_the_figures_say_what_their_bars_cover(three, tmp_path):
    from robeval.report import plots
    from robeval.report.html_page import html_report
    from robeval.results.runs import load_run
    from robeval.results.statistics import member_interval, member_matrix

    run, store = three
    row = run.summary.set_index(["model", "attack"]).loc[("digits-deit", "pgd")]
    ours = run.records[(run.records["model"] == "digits-deit") & (run.records["attack"] == "pgd")]
    low, high = member_interval(member_matrix(ours, "adv_top1")[0])
    assert (row["top1_low"], row["top1_high"]) == pytest.approx((round(low, 2), round(high, 2)))
    assert row["top1_low"] < row["top1"] < row["top1_high"]
    assert row["top1_high"] - row["top1_low"] > 2 * 1.96 * row["top1_std"] / math.sqrt(3)  # seeds and examples
    db = Store(store)
    page = html_report(db, [load_run(db, run.run_id)], gallery_size=0)
    section = page[page.index('id="members"') : page.index('id="figures"')]
    for member, (top1, top5) in enumerate(zip(row["member_top1"], row["member_top5"])):
        assert f"{member + 1}: digits-deit-seed{member}.safetensors" in section and f"{top1:.2f} / {top5:.2f}" in section
    assert "digits-deit-elliptical" not in section  # one checkpoint: nothing to show per member
    figure = page[page.index('id="figures"') : page.index('id="convergence"')]
    assert "95% interval of its mean for seeds and examples together" in figure
    bars = plots.bars_for_eps(run.summary[run.summary["eps"] == run.summary["eps"].iloc[0]])
    (ax,) = bars.axes
    dots = [line for line in ax.get_lines() if line.get_marker() == "."]
    assert sum(len(line.get_ydata()) for line in dots) == 3 * run.summary["attack"].nunique()  # each member a dot
    assert any("seeds + examples (dots: members)" in text.get_text() for text in bars.legends[0].get_texts())

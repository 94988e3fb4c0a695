"""``--protocol fast`` through the engine: its own attacks and rules; the pass and a seeded audit of its
survivors stored per example (audit units); an audit break escalates (APGD-T's remaining targets alone,
or every stage, whose result then equals the cascade's AutoAttack example by example); the bound under
every table, in ``robeval check`` and run.json; never a leaderboard entry nor compared with a standard run;
a run resumed in its first or second pass, and one of two workers, equal one run in one process."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

import robeval
import robeval.evaluation.fast.steps as fast_run
from robeval.api import evaluate_full
from robeval.core.errors import UserError
from robeval.core.records import audit_unit
from robeval.evaluation.config import make_config
from robeval.evaluation.fast.audit import AUDIT_STAGES, FAST_PASS, FAST_TARGETS
from robeval.evaluation.fast.bound import AuditBound
from robeval.evaluation.fast.summary import audit_lines
from robeval.evaluation.protocols import PROTOCOLS
from robeval.store import Store

from .conftest import one_line_error, run_cli
from .reference_runs import StopAfter

ATTACKS = [*FAST_PASS, *AUDIT_STAGES]
AUDITS = [audit_unit(s) for s in AUDIT_STAGES]
SHORT = {"apgd-ce": {"n_iter": 10}, "apgd-t-malt": {"n_iter": 10, "n_target_classes": 1},
         "apgd-t-rest": {"n_iter": 10, "skip_malt_targets": 1}, "fab-t": {"n_iter": 10}, "square": {"n_queries": 100},
         "apgd-t": {"n_iter": 10}}  # fmt: skip
KEY = ["model", "eps", "attack", "example"]
# A classifier a gradient cannot attack: the class means' linear classifier of the image on the digits' own 1/16
# grid, plus a term that moves only with the pixels pushed by the full eps (as Square's points are; a random start
# pushes one).  Gradient attacks and FAB-T fool nothing; Square fools most examples: an audit Square breaks.
STEPPED = """
import torch
from torch import nn

import robeval
from robeval.data.digits import digits_split

EPS = 6 / 255


class Stepped(nn.Module):
    def __init__(self):
        super().__init__()
        x, y = digits_split("train")
        x, y = torch.from_numpy(x).flatten(1).double(), torch.from_numpy(y)
        means = torch.stack([x[y == c].mean(0) for c in range(10)])
        self.weight = nn.Parameter((2 * means).float())
        self.bias = nn.Parameter((-(means * means).sum(1)).float())
        self.register_buffer("push", 0.1 * torch.linspace(-1, 1, 10))

    def forward(self, x):
        flat = x.flatten(1)
        grid = torch.round(flat * 16) / 16
        pushed = ((flat - grid) >= EPS * (1 - 1e-3)).float().sum(1, keepdim=True)
        return grid @ self.weight.T + self.bias + pushed * self.push + 0 * flat.sum(1, keepdim=True)


def build():
    return Stepped(), robeval.ModelConfig(input_size=(1, 8, 8), num_classes=10)
"""


def every_third(seed, survivors, rate):
    """An audit sample larger than 5%, so that a few digits give it something to break."""
    return list(survivors)[::3]


def sorted_records(records: pd.DataFrame) -> pd.DataFrame:
    return records.drop(columns="run_id").sort_values(KEY).reset_index(drop=True)


def examples(records: pd.DataFrame, attack: str, robust: bool | None = None) -> set[int]:
    rows = records[records["attack"] == attack]
    return set((rows if robust is None else rows[rows["adv_top1"].astype(bool) == robust])["example"])


def test_fast_runs_its_own_attacks_with_the_pass_targets_skipped_by_the_audit():
    config = make_config(protocol="fast")
    assert config.attacks == ATTACKS == list(PROTOCOLS.require("fast").default_attacks)
    assert config.settings["apgd-t-malt"]["n_target_classes"] == FAST_TARGETS
    assert config.settings["apgd-t-rest"]["skip_malt_targets"] == FAST_TARGETS
    assert PROTOCOLS.require("fast").autoattack_version is None  # no AutoAttack version: benchmark() cannot run it
    for options, words in ((dict(attacks="pgd"), "drop --attacks"), (dict(cascade=True), "drop --cascade"),
                           (dict(shift="corruptions"), "--protocol standard"),
                           (dict(settings={"apgd-t-malt": {"n_target_classes": 2}}), "skip_malt_targets (3)")):  # fmt: skip
        with pytest.raises(UserError, match="--protocol fast") as refused:
            make_config(protocol="fast", **options)
        assert words in str(refused.value)


@pytest.fixture(scope="module")
def rest_run(tmp_path_factory):
    """digits-deit at 16/255 with one MALT target in the pass and a third of its survivors audited: APGD-T's
    remaining targets break audited points (and nothing else does), so they alone escalate."""
    path = tmp_path_factory.mktemp("fast") / "s.sqlite"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fast_run, "audit_sample", every_third)
        run = evaluate_full(models="digits-deit", eps="16/255", n_examples=60, batch_size=20, protocol="fast",
                            settings=SHORT, store=path, out=path.parent / "out")  # fmt: skip
    return path, run


def test_the_audit_units_hold_the_sampled_survivors_and_the_stage_that_broke_each(rest_run):
    _, run = rest_run
    rec = run.records
    survivors = examples(rec, "apgd-t-malt", robust=True)
    audited = examples(rec, AUDITS[0])
    assert 0 < len(audited) < len(survivors) and audited <= survivors
    assert all(examples(rec, unit) == audited for unit in AUDITS)
    broke = {s: examples(rec, unit, robust=False) - examples(rec, AUDITS[i - 1], robust=False) if i else
             examples(rec, unit, robust=False) for i, (s, unit) in enumerate(zip(AUDIT_STAGES, AUDITS))}  # fmt: skip
    assert broke["apgd-t-rest"] and not broke["fab-t"] and not broke["square"]
    row = run.summary.iloc[0]
    assert (row["audited"], row["audit_broken"], row["escalated"]) == (len(audited), len(broke["apgd-t-rest"]),
                                                                        ("apgd-t-rest",))  # fmt: skip


def test_an_apgd_t_break_escalates_apgd_t_to_every_survivor_and_the_sample_stands_for_the_rest(rest_run):
    path, run = rest_run
    rec, info = run.records, json.loads((path.parent / "out" / "run.json").read_text())
    survivors, audited = examples(rec, "apgd-t-malt", robust=True), examples(rec, AUDITS[0])
    attacked = info["examples_attacked"]
    assert attacked["digits-deit|16/255|apgd-t-rest"] == len(survivors - audited)  # the audited ones keep the audit's
    assert attacked["digits-deit|16/255|fab-t"] == attacked["digits-deit|16/255|square"] == 0
    for stage, unit in zip(AUDIT_STAGES, AUDITS):  # the audit's records are the stage's, passes included
        mine = rec[(rec["attack"] == stage) & rec["example"].isin(audited)].set_index("example").sort_index()
        theirs = rec[rec["attack"] == unit].set_index("example").sort_index()
        pd.testing.assert_frame_equal(mine.drop(columns=["attack", "run_id"]), theirs.drop(columns=["attack", "run_id"]))
    robust, standing = examples(rec, "square", robust=True), examples(rec, AUDITS[0], robust=True)
    n, top1 = run.summary.iloc[0]["n"], run.summary.set_index("attack")["top1"]
    assert top1["apgd-t-rest"] < top1["apgd-t-malt"] and top1["square"] == top1["apgd-t-rest"] == top1["any"]
    bound = AuditBound(int(n), len(robust), len(standing), 0).bound
    assert run.summary["aa_bound"].iloc[0] == pytest.approx(100 * bound) and 0 < bound < len(robust) / n
    line = str(run.summary["audit"].iloc[0])  # its phrases, as results.csv shows them
    assert "so apgd-t-rest ran on every survivor" in line and f">= {100 * bound:.2f}%" in line


def test_every_table_robeval_check_and_run_json_name_the_protocol_the_audit_and_the_bound(rest_run):
    path, run = rest_run
    bound = f">= {run.summary['aa_bound'].iloc[0]:.2f}%"
    for fmt, shown in (("md", bound), ("latex", bound.replace("%", r"\%").replace(">", r"\textgreater{}")), ("html", bound.replace(">", "&gt;"))):
        table = run.table(fmt)
        assert "protocol: fast" in table and "not AutoAttack" in table and shown in table, fmt
    checked = run_cli("check", run.run_id, "--store", str(path))
    assert checked.returncode == 0 and "(fast, finished)" in checked.stdout and bound in checked.stdout
    info = json.loads((path.parent / "out" / "run.json").read_text())
    assert any(bound in line for line in info["audit"]) and info["protocol"]["audit"]["rate"] == 0.05
    assert "AutoAttack's own draws" in info["randomness"]["square"] and "per example" in info["randomness"]["apgd-ce"]
    columns = pd.read_csv(path.parent / "out" / "results.csv").columns
    assert {"audited", "audit_broken", "escalated", "aa_bound", "audit"} <= set(columns)


def test_a_fast_run_is_never_a_leaderboard_entry_nor_compared_with_a_standard_one(rest_run, cli):
    path, run = rest_run
    with pytest.raises(UserError, match="not AutoAttack's run"):
        run.table("robustbench")
    refused = cli("table", run.run_id, "-f", "robustbench", "--store", str(path))
    assert one_line_error(refused, "protocol fast", "--cascade")
    standard = evaluate_full(models="digits-deit", eps="16/255", n_examples=60, batch_size=20, attacks="apgd-ce",
                             settings=SHORT, store=path)  # fmt: skip
    compared = cli("compare", f"{run.run_id}:digits-deit", f"{standard.run_id}:digits-deit", "--store", str(path))
    assert one_line_error(compared, "protocol (fast vs standard)")


def test_a_model_of_several_members_prints_each_members_audit_and_the_models_bound(monkeypatch):
    monkeypatch.setattr(fast_run, "audit_sample", every_third)
    config = robeval.ModelConfig(input_size=(1, 8, 8))
    members = [(robeval.load_model(name), config) for name in ("digits-deit", "digits-deit-elliptical")]
    run = evaluate_full(models=[robeval.Members("pair", members)], eps="16/255", n_examples=20, batch_size=10,
                        protocol="fast", settings=SHORT)  # fmt: skip
    said, bound = audit_lines(run.summary), run.summary["aa_bound"].iloc[0]
    lines, (warned,) = [s for s in said if not s.startswith("warning:")], [s for s in said if s.startswith("warning:")]
    assert [line.split(": ")[1] for line in lines] == ["member 1", "member 2", "over its 2 members"]
    fast = float(run.summary.set_index("attack").loc["any", "top1"])
    needed = int(re.search(r"about ([0-9,]+) examples", warned).group(1).replace(",", ""))
    assert f"{fast - bound:.1f} points below" in warned and "on 20 examples" in warned and needed > 20
    assert audit_lines(run.summary.assign(n=needed, aa_bound=fast - 1.9)) == lines  # within 2 points: no warning
    bounds = [float(re.search(r">= ([0-9.]+)%", line).group(1)) for line in lines]
    assert bounds[2] == pytest.approx(bound, abs=0.005) == pytest.approx((bounds[0] + bounds[1]) / 2, abs=0.01)
    table = run.table("md")
    assert all(line in table for line in lines)


def stepped(folder) -> str:
    path = folder / "stepped.py"
    path.write_text(STEPPED)
    return f"{path}:build"


@pytest.mark.filterwarnings("ignore:there are .* points with zero gradient")  # AutoAttack's own check: by design
def test_a_square_break_escalates_everything_and_the_result_is_the_cascades_autoattack(tmp_path, monkeypatch):
    """On a model only Square fools, the audit's Square breaks: every stage runs on every survivor, and the
    robust examples and the Square records equal those of --cascade with AutoAttack's attacks."""
    model = stepped(tmp_path)
    options = dict(models=model, eps="6/255", n_examples=60, batch_size=30, settings=SHORT)
    cascade = evaluate_full(**options, attacks="apgd-ce,apgd-t,fab-t,square", cascade=True).records
    monkeypatch.setattr(fast_run, "audit_sample", every_third)
    run = evaluate_full(**options, protocol="fast")
    rec = run.records
    row = run.summary.iloc[0]
    assert row["escalated"] == AUDIT_STAGES and pd.isna(row["aa_bound"])
    assert "the result is AutoAttack's (no bound needed)" in str(row["audit"])
    assert examples(rec, "apgd-t-malt", robust=True) == examples(cascade, "apgd-t", robust=True)
    assert examples(rec, "square", robust=True) == examples(cascade, "square", robust=True)
    assert len(examples(rec, "square", robust=True)) < len(examples(rec, "fab-t", robust=True)) / 2
    ours, theirs = (r[r["attack"] == "square"].set_index("example").sort_index() for r in (rec, cascade))
    for column in ("adv_top1", "adv_pred", "linf", "l2"):
        pd.testing.assert_series_equal(ours[column], theirs[column])


@pytest.mark.parametrize("stop_after", [3, 12])  # in the first pass (its audit), in the second (the stages)
def test_a_resumed_fast_run_gives_the_records_of_an_uninterrupted_one(tmp_path, monkeypatch, stop_after):
    monkeypatch.setattr(fast_run, "audit_sample", every_third)
    options = dict(models="digits-deit", eps="16/255", n_examples=20, batch_size=10, protocol="fast", settings=SHORT)
    reference = evaluate_full(**options).records
    store = str(tmp_path / "s.sqlite")
    with pytest.raises(KeyboardInterrupt) as stopped:
        evaluate_full(**options, store=store, reporter=StopAfter(stop_after))
    resumed = evaluate_full(**options, store=store, resume=stopped.value.run_id).records
    pd.testing.assert_frame_equal(sorted_records(reference), sorted_records(resumed))
    assert set(resumed["attack"]) == {"clean", *ATTACKS, *AUDITS}


@pytest.mark.filterwarnings("ignore:there are .* points with zero gradient")
def test_two_workers_agree_on_the_escalation_and_give_one_workers_records(tmp_path):
    """Through torchrun (gloo on CPU): the model only Square fools, the protocol's own 5% audit (seed 4 samples
    4 of the 71 survivors)."""
    model = stepped(tmp_path)
    args = ["run", "-m", model, "--protocol", "fast", "--eps", "6/255", "-n", "80", "--seed", "4", "--batch-size", "20",
            "--quiet",
            *(f"--set={a}.{k}={v}" for a, s in SHORT.items() if a != "apgd-t" for k, v in s.items())]  # fmt: skip
    for name, extra in (("one", []), ("two", ["--nproc", "2"])):
        done = run_cli(*args, *extra, "--store", str(tmp_path / f"{name}.sqlite"), "--out", str(tmp_path / name),
                       process=bool(extra))  # fmt: skip
        assert done.returncode == 0, done.stderr
    stored = [Store(tmp_path / f"{name}.sqlite") for name in ("one", "two")]
    one, two = (sorted_records(s.records(s.runs()["id"].iloc[-1]).assign(run_id="")) for s in stored)
    pd.testing.assert_frame_equal(one, two)
    broken = examples(one, "fab-t", robust=True) - examples(one, "square", robust=True)
    assert examples(one, AUDITS[0]) and broken - examples(one, AUDITS[0])  # audited, broken, escalated


def test_robeval_run_prints_the_audit_the_bound_and_the_wide_bound_warning_once_as_table_does(tmp_path):
    """They are the caption's lines (over the table); the lines under it do not say them again."""
    tiny = [f"{a}.n_iter=1" for a in ("apgd-ce", "apgd-t-malt", "apgd-t-rest", "fab-t")] + ["square.n_queries=1"]
    store = str(tmp_path / "s.sqlite")
    ran = run_cli("run", "-m", "digits-deit", "-n", "4", "--eps", "16/255", "--protocol", "fast", "-q",
                  *[a for s in tiny for a in ("--set", s)], "--store", store, "--out", str(tmp_path / "out"))  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    table = run_cli("table", "--store", store)
    for printed in (ran.stdout, table.stdout):  # (a caption's long line wraps)
        assert printed.count("fast protocol, digits-deit eps 16/255") == 2, printed  # the audit, and the warning
        assert printed.count("AutoAttack's robust accuracy on these") == printed.count("Clopper-Pearson") == 1
        assert printed.count("warning: fast protocol, digits-deit eps 16/255: the bound is") == 1
    checked = run_cli("check", "--store", store)  # no table: the audit lines, then the flags and caveats
    for printed in (ran.stdout, checked.stdout):  # the wide bound is the caption's warning, not a second caveat line
        assert "[wide-bound]" not in printed and printed.count("the bound is") == 1, printed

"""Soundness checks: model-level checks on the first batch, flags from the summaries, robeval check."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

import robeval
from robeval.evaluation.model_run import model_checks
from robeval.results.soundness import run_findings
from robeval.store import Store

from .conftest import run_cli


class _Softmaxed(torch.nn.Module):
    def __init__(self, net, log=False):
        super().__init__()
        self.net, self.log = net, log

    def forward(self, x):
        z = self.net(x)
        return z.log_softmax(1) if self.log else z.softmax(1)


class _Noisy(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x + 0.05 * torch.randn_like(x))


class _Quantized(torch.nn.Module):
    """Rounds its input: zero gradients almost everywhere (gradient masking by design)."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(torch.round(x * 4) / 4)


@pytest.mark.parametrize("wrap, check", [(lambda m: m, None), (_Softmaxed, "softmax-output"),
                                         (lambda m: _Softmaxed(m, log=True), "softmax-output"),
                                         (_Noisy, "randomness"), (_Quantized, "zero-gradients")])
def test_model_level_checks(wrap, check):
    model = robeval.load_model("digits-deit")
    x = torch.rand(16, 1, 8, 8)
    y = torch.randint(0, 10, (16,))
    clean = pd.DataFrame([{"model": "m", "attack": "clean", "eps": "8/255", "eps_value": 8 / 255, "top1": 90.0, "n": 16}])
    flags = run_findings(clean, {"model_checks": {"m": model_checks(wrap(model), x, y)}})["flags"]
    assert [f["check"] for f in flags] == ([check] if check else [])
    for f in flags:
        assert f["message"] and f["advice"]


def test_summary_level_checks():
    rows = [("pgd", "2/255", 2 / 255, 60.0), ("pgd", "8/255", 8 / 255, 40.0), ("square", "2/255", 2 / 255, 70.0),
            ("square", "8/255", 8 / 255, 30.0), ("fgsm", "2/255", 2 / 255, 50.0), ("fgsm", "8/255", 8 / 255, 55.0)]
    summary = pd.DataFrame([{"model": "m", "attack": a, "eps": e, "eps_value": v, "top1": t, "n": 100}
                            for a, e, v, t in rows])
    flags = run_findings(summary, {})["flags"]
    # PGD worse than FGSM at 2/255 is a flag too (it was an indicator of the checklist only)
    assert [f["check"] for f in flags] == ["gradient-masking", "one-step-beats-iterative", "eps-monotonicity"]
    assert "8/255" in flags[0]["message"] and "2/255" not in flags[0]["message"]  # the raised eps only
    assert flags[1]["message"] == "eps 2/255: PGD 60.00, FGSM 50.00"
    assert "fgsm" in flags[2]["message"] and "pgd" not in flags[2]["message"]


def test_the_adaptive_gaps_are_per_attack_never_per_shifted_condition():
    from robeval.results.indicators import adaptive_gaps

    rows = [(model, attack, corruption, top1) for model, pgd, fog in (("e", 40.0, 70.0), ("e+adaptive", 30.0, 70.0))
            for attack, corruption, top1 in (("pgd", "", pgd), ("fog@1", "fog", fog))]
    summary = pd.DataFrame([{"model": m, "attack": a, "corruption": c, "eps": "8/255", "top1": t, "n": 100}
                            for m, a, c, t in rows])
    gaps = adaptive_gaps(summary)
    assert list(zip(gaps["attack"], gaps["gap"])) == [("pgd", 10.0)]


@pytest.mark.parametrize("n, flagged", [(50, False), (100, True)])
def test_a_gap_of_one_example_is_never_a_flag(n, flagged):
    """2 points are one example of 50 (luck) and two of 100: the gap must exceed 1 point and be 2 examples."""
    rows = [("pgd", "8/255", 40.0), ("fgsm", "8/255", 42.0), ("square", "8/255", 38.0),
            ("pgd", "16/255", 42.0), ("fgsm", "16/255", 44.0), ("square", "16/255", 20.0)]
    summary = pd.DataFrame([{"model": "m", "attack": a, "eps": e, "eps_value": int(e.split("/")[0]) / 255, "top1": t,
                             "n": n} for a, e, t in rows])
    flags = {f["check"]: f["message"] for f in run_findings(summary, {})["flags"]}
    # square at 16/255 is far below PGD either way; the 2-point gaps (PGD and FGSM rising with eps, square
    # below PGD at 8/255) count only when they are two examples
    assert "eps 16/255: square" in flags["gradient-masking"]
    assert ("eps 8/255: square" in flags["gradient-masking"]) is flagged
    assert ("eps-monotonicity" in flags) is flagged


def test_check_command_and_adaptive(tmp_path):
    store = tmp_path / "s.sqlite"
    proc = run_cli("run", "-m", "digits-deit-elliptical", "-n", "10", "--attacks", "fgsm,pgd", "--adaptive", "--quiet",
                   "--store", str(store), "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    df = pd.read_csv(tmp_path / "o" / "results.csv")
    assert set(df["model"]) == {"digits-deit-elliptical", "digits-deit-elliptical+adaptive"}
    assert "Adaptive attack (gradients through M) vs default" in proc.stdout
    run_id = Store(store).runs()["id"].iloc[0]
    check = run_cli("check", run_id, "--store", str(store))
    assert check.returncode == 0 and "Soundness checks" in check.stdout
    assert run_cli("check", "nope", "--store", str(store)).returncode == 2


@pytest.mark.parametrize("top1, n, classes, near", [
    (100.0, 2, 10, True),  # two right of two is what guessing gets with p = 0.01: too few to tell
    (100.0, 4, 10, False),
    (50.0, 400, 10, False),
    (15.0, 10_000, 10, True),  # far above chance statistically, still under twice it
    (60.0, 5, 2, True),
    (99.0, 100, 2, False),
    (0.15, 50_000, 1000, True),
])  # fmt: skip
def test_near_chance_is_a_test_against_guessing(top1, n, classes, near):
    from robeval.results.indicators import near_chance

    assert near_chance(top1, n, classes)[0] is near


def test_a_module_fed_unnormalised_input_is_flagged_near_chance_and_the_checklist_says_so(tmp_path):
    """The network of digits-deit without its normalisation (it expects (x - 0.5) / 0.5) given to
    benchmark(): its clean accuracy is near chance, which robeval check and its checklist report."""
    from robeval import benchmark

    from .conftest import FAST_SETTINGS

    store = tmp_path / "s.sqlite"
    bare = robeval.load_model("digits-deit").net
    settings = {a: FAST_SETTINGS[a] for a in ("apgd-ce", "apgd-t", "fab-t", "square")}
    clean, _ = benchmark(bare, n_examples=16, dataset="digits", device="cpu", settings=settings, store=store)
    assert clean < 0.2
    checked = run_cli("check", "--store", str(store), "--report", str(tmp_path / "checklist.md"))
    assert checked.returncode == 0 and "[near-chance]" in checked.stdout and "normalisation inside" in checked.stdout
    row = (tmp_path / "checklist.md").read_text().split("| Clean accuracy is above chance |")[1].splitlines()[0]
    assert "| RAISED | clean top-1" in row
    trained = robeval.evaluate_full(models=["digits-deit"], n_examples=16, attacks="fgsm", device="cpu")
    assert not [f for f in trained.info["flags"] if f["check"] == "near-chance"]

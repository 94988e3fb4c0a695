"""Evaluations stronger than the standard suite: AutoAttack's plus version (APGD-DLR, untargeted
FAB, restarts) and EOT for models that are random at inference."""

from __future__ import annotations

import torch

import robeval
from robeval.api import evaluate_full, make_config
from robeval.attacks import create, list_attacks, parse_attack_list
from robeval.results.flags import flags_from_model_checks
from robeval.report.paper import render
from robeval.data.digits import digits_split

SEVEN = ["fgsm", "pgd", "spsa", "apgd-ce", "apgd-t", "fab-t", "square"]


def test_all_is_still_the_seven_attack_suite_and_aa_plus_brings_its_six():
    assert parse_attack_list("all") == SEVEN and make_config().attacks == SEVEN
    assert {"apgd-dlr", "fab"} <= {a.name for a in list_attacks()}
    assert make_config(protocol="aa-plus").attacks == ["apgd-ce", "apgd-dlr", "fab", "square", "apgd-t", "fab-t"]
    assert make_config(protocol="aa-plus").attack_settings("apgd-ce")["n_restarts"] == 5


def test_aa_plus_is_at_least_as_strong_as_the_standard_protocol_on_the_same_examples():
    settings = {"apgd-ce": {"n_iter": 10}, "apgd-dlr": {"n_iter": 10}, "fab": {"n_iter": 10}}
    common = dict(models="digits-deit", attacks="apgd-ce,apgd-dlr,fab", eps="8/255", n_examples=40, settings=settings)
    standard = evaluate_full(protocol="standard", **common).summary.set_index("attack")
    plus = evaluate_full(protocol="aa-plus", **common)
    assert plus.run["attack_settings"]["apgd-dlr"]["n_restarts"] == 5
    top1 = plus.summary.set_index("attack")["top1"]
    for attack in ("apgd-ce", "apgd-dlr", "fab", "any"):
        assert top1[attack] <= standard.loc[attack, "top1"], attack  # restart 0 is the standard run, per example
    assert "protocol: aa-plus" in render(plus.summary, "md")


class NoisyGradient(torch.nn.Module):
    """Deterministic predictions, random input gradients: a term worth zero whose gradient is noise
    (a model that is random at inference, as far as a gradient attack can tell)."""

    def __init__(self, model: torch.nn.Module, scale: float) -> None:
        super().__init__()
        self.model, self.scale = model, scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.model(x)
        noise = torch.randn(logits.shape[1], *x.shape[1:], device=x.device)
        return logits + self.scale * torch.einsum("bchw,kchw->bk", x - x.detach(), noise)


def test_eot_recovers_what_the_plain_attack_misses_on_a_random_model():
    torch.manual_seed(0)
    plain_model = robeval.load_model("digits-deit")
    noisy = NoisyGradient(plain_model, scale=10.0)
    x, y = (torch.from_numpy(a[:100]) for a in digits_split("test"))

    def robust(model, attack, **settings):
        adv = create(attack, noisy, eps=8 / 255, seed=0, **settings)(x, y)
        with torch.no_grad():
            return (model(adv).argmax(1) == y).float().mean().item()

    for attack, extra in (("fgsm", {}), ("pgd", {"steps": 10})):
        plain, eot = robust(noisy, attack, **extra), robust(noisy, attack, eot_iter=20, **extra)
        assert eot < plain - 0.05, (attack, plain, eot)


def test_the_randomness_flag_points_to_eot():
    flags = flags_from_model_checks("m", {"relative_logit_change_between_passes": 0.1, "outputs_are_probabilities": False,
                                          "outputs_are_log_probabilities": False, "share_zero_or_nan_gradients": 0.0})
    assert any("--set apgd-ce.eot_iter=20" in f.advice for f in flags)


def test_transfer_attacks_craft_once_are_eps_checked_and_equal_white_box_on_their_source(monkeypatch):
    import robeval.attacks.transfer as transfer

    calls = []
    real = transfer.create

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(transfer, "create", counting)
    res = evaluate_full(models=["digits-deit", "digits-deit-elliptical", "digits-rvt"], attacks="pgd,transfer-pgd",
                        source_model="digits-deit", n_examples=40, batch_size=20, settings={"pgd": {"steps": 5},
                                                                                            "transfer-pgd": {"steps": 5}})
    assert calls == ["pgd", "pgd"]  # two batches crafted once, for three targets
    rec = res.records.set_index(["model", "attack", "example"])
    own = rec.loc["digits-deit"]
    assert (own.loc["transfer-pgd"]["adv_pred"] == own.loc["pgd"]["adv_pred"]).all()  # same seed, same model: same images
    assert (res.records[res.records["attack"] == "transfer-pgd"]["linf"] <= 8 / 255 + 1e-6).all()
    assert res.run["attack_implementations"]["transfer-pgd"].startswith("robeval PGD on --source-model")


def test_transfer_below_white_box_is_flagged():
    import pandas as pd

    from robeval.results.flags import flags_from_summary

    summary = pd.DataFrame([{"model": "m", "eps": "8/255", "eps_value": 8 / 255, "attack": a, "top1": v}
                            for a, v in (("clean", 90.0), ("pgd", 60.0), ("apgd-ce", 58.0), ("transfer-pgd", 30.0))])
    flags = flags_from_summary(summary)
    assert [f.check for f in flags] == ["transfer-beats-white-box"] and "transfer-pgd" in flags[0].message


def test_transfer_errors_are_one_line():
    from robeval.errors import UserError
    import pytest

    for kwargs, message in (
        (dict(attacks="transfer-pgd"), "needs --source-model"),
        (dict(attacks="pgd", source_model="digits-deit"), "--source-model is for transfer attacks"),
        (dict(attacks="transfer-pgd", source_model="rvt-tiny=x.pth"), "checkpoint file not found"),
        (dict(attacks="transfer-pgd", source_model="deit-tiny", weights="random"), "takes input (3, 224, 224)"),
        (dict(attacks="transfer-pgd", source_model="digits-deit", protocol="nielsen2024"), "pixel-space protocol"),
    ):
        with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
            evaluate_full(models="digits-deit", n_examples=10, **kwargs)


def test_check_report_lists_every_indicator_with_a_verdict(tmp_path):
    from robeval.report.checklist import INDICATORS

    from .conftest import run_cli

    store = str(tmp_path / "s.sqlite")
    proc = run_cli("run", "-m", "digits-deit", "-m", "digits-deit-elliptical", "--adaptive", "--attacks",
                   "fgsm,pgd,square,transfer-pgd", "--source-model", "digits-deit", "-n", "20", "--eps", "8/255,64/255",
                   "--set", "square.n_queries=100", "--set", "pgd.steps=5", "--set", "transfer-pgd.steps=5",
                   "--quiet", "--store", store)
    assert proc.returncode == 0, proc.stderr
    checked = run_cli("check", "--store", store, "--report", str(tmp_path / "report.md"))
    assert checked.returncode == 0, checked.stderr
    text = (tmp_path / "report.md").read_text()
    for model in ("digits-deit", "digits-deit-elliptical"):
        section = text.split(f"## {model}\n")[1].split("\n## ")[0]
        assert all(f"| {ind.name} |" in section for ind in INDICATORS) and f"**Verdict for {model}:" in section
    assert "Accuracy reaches 0 at a large eps | Carlini" in text and "| ok | lowest fixed-eps white-box top-1 at eps >= 64/255: 0.00%" in text
    assert "n/a | no data-dependent attention weight" in text.split("## digits-deit-elliptical")[0]


def test_check_report_compares_restarts_with_a_run_of_the_other_protocol(tmp_path):
    from robeval.report.checklist import checklist
    from robeval.results.runs import resolve_runs, restart_companion
    from robeval.results.store import Store

    store = Store(tmp_path / "s.sqlite")
    common = dict(models="digits-deit", attacks="apgd-ce", eps="8/255", n_examples=20, store=store,
                  settings={"apgd-ce": {"n_iter": 5}})
    standard = evaluate_full(protocol="standard", **common)
    plus = evaluate_full(protocol="aa-plus", **common)
    run = resolve_runs(store, [plus.run["run_id"]])[0]
    companion = restart_companion(store, run)
    assert set(companion["run_id"]) == {standard.run["run_id"]}
    row = checklist(run.summary, {}, run.run_id, "aa-plus", companion=companion).split("| Restarts do not change the result |")[1]
    one, five = (r.summary.set_index("attack").loc["apgd-ce", "top1"] for r in (standard, plus))
    assert f"eps 8/255: apgd-ce {one:.2f} with 1 restart, {five:.2f} with 5" in row.splitlines()[0]
    assert row.split("|")[1].strip() in ("ok", "RAISED")
    alone = checklist(run.summary, {}, run.run_id, "aa-plus").split("| Restarts do not change the result |")[1]
    assert "| not run | the reported numbers include 5 restarts" in alone

"""Protocols and stronger attacks: the suite, AutoAttack's plus version, EOT and the randomness flag."""

from __future__ import annotations

import pandas as pd
import torch

import robeval
from robeval.api import evaluate_full, make_config
from robeval.attacks import create, list_attacks, parse_attack_list
from robeval.data.digits import digits_split
from robeval.evaluation.plan import make_plan
from robeval.report.paper import render
from robeval.results.soundness import run_findings

SEVEN = ["fgsm", "pgd", "spsa", "apgd-ce", "apgd-t", "fab-t", "square"]


def test_all_is_still_the_seven_attack_suite_and_aa_plus_brings_its_six():
    assert parse_attack_list("all") == SEVEN and make_config().attacks == SEVEN
    assert {"apgd-dlr", "fab"} <= {a.name for a in list_attacks()}
    assert make_config(protocol="aa-plus").attacks == ["apgd-ce", "apgd-dlr", "fab", "square", "apgd-t", "fab-t"]
    assert make_plan(make_config(protocol="aa-plus")).config.settings["apgd-ce"]["n_restarts"] == 5


def test_aa_plus_is_at_least_as_strong_as_the_standard_protocol_on_the_same_examples():
    settings = {"apgd-ce": {"n_iter": 10}, "apgd-dlr": {"n_iter": 10}, "fab": {"n_iter": 10}}
    common = dict(models="digits-deit", attacks="apgd-ce,apgd-dlr,fab", eps="8/255", n_examples=20, settings=settings)
    standard = evaluate_full(protocol="standard", **common).summary.set_index("attack")
    plus = evaluate_full(protocol="aa-plus", **common)
    assert plus.info["attack_settings"]["apgd-dlr"]["n_restarts"] == 5
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
    checks = {"relative_logit_change_between_passes": 0.1, "outputs_are_probabilities": False,
              "outputs_are_log_probabilities": False, "share_zero_or_nan_gradients": 0.0}
    clean = pd.DataFrame([{"model": "m", "attack": "clean", "eps": "8/255", "eps_value": 8 / 255, "top1": 90.0, "n": 16}])
    flags = run_findings(clean, {"model_checks": {"m": checks}})["flags"]
    assert any("--set apgd-ce.eot_iter=20" in f["advice"] for f in flags)

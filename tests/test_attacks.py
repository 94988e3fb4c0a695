"""The attack suite on the digits demo models: bounds, monotonicity, agreement with AutoAttack, seeding."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from pyautoattack.autopgd_base import APGDAttack, APGDAttack_targeted
from pyautoattack.fab_pt import FABAttack_PT

import robeval
from robeval.api import evaluate_full
from robeval.attacks import create, parse_attack_list
from robeval.attacks.spsa import SPSA
from robeval.core.errors import UserError
from robeval.data.digits import digits_split
from robeval.evaluation.attack_guards import AttackBoundsError, verify_adversarial

from .conftest import FAST_SETTINGS

ALL = parse_attack_list("all")  # the seven-attack suite (apgd-dlr and fab come with protocol aa-plus)
WHITE_BOX = ["fgsm", "pgd", "apgd-ce", "apgd-t", "fab-t"]


@pytest.fixture(scope="module")
def model():
    return robeval.load_model("digits-deit")


@pytest.fixture(scope="module")
def batch():
    x, y = digits_split("test")
    return torch.from_numpy(x[:48]), torch.from_numpy(y[:48])


def summary_of(result) -> pd.DataFrame:
    return result.summary.set_index(["model", "eps", "attack"])


def test_registry_lists_the_seven_attacks_in_table_order():
    assert ALL == ["fgsm", "pgd", "spsa", "apgd-ce", "apgd-t", "fab-t", "square"]


def test_eps_zero_gives_clean_accuracy_for_every_attack():
    res = evaluate_full(models="digits-deit", eps="0", n_examples=30, settings=FAST_SETTINGS)
    s = res.summary
    clean = s[s["attack"] == "clean"].iloc[0]
    for attack in ALL + ["any"]:
        row = s[s["attack"] == attack].iloc[0]
        assert (row["top1"], row["top5"]) == (clean["top1"], clean["top5"]), attack
    assert (res.records["linf"] == 0).all()


@pytest.fixture(scope="module")
def eps_sweep():
    return evaluate_full(models="digits-deit-elliptical", eps="2/255,8/255,32/255", n_examples=20, settings=FAST_SETTINGS)


def test_top1_never_rises_with_eps(eps_sweep):
    s = summary_of(eps_sweep)
    for attack in ALL + ["any"]:
        top1 = [s.loc[("digits-deit-elliptical", e, attack), "top1"] for e in ("2/255", "8/255", "32/255")]
        assert top1[0] >= top1[1] >= top1[2], (attack, top1)


def test_any_is_the_per_example_worst_case(eps_sweep):
    s = summary_of(eps_sweep)
    for eps in ("2/255", "8/255", "32/255"):
        any1 = s.loc[("digits-deit-elliptical", eps, "any"), "top1"]
        any5 = s.loc[("digits-deit-elliptical", eps, "any"), "top5"]
        for attack in ["clean"] + ALL:
            assert any1 <= s.loc[("digits-deit-elliptical", eps, attack), "top1"]
            assert any5 <= s.loc[("digits-deit-elliptical", eps, attack), "top5"]
    rec = eps_sweep.records
    per_example = rec[rec["eps"] == "8/255"].groupby("example")["adv_top1"].min()
    assert abs(per_example.mean() * 100 - s.loc[("digits-deit-elliptical", "8/255", "any"), "top1"]) < 1e-9


def test_records_stay_in_the_ball_and_count_passes(eps_sweep):
    rec = eps_sweep.records
    for eps, value in (("2/255", 2 / 255), ("32/255", 32 / 255)):
        assert rec[rec["eps"] == eps]["linf"].max() <= value + 1e-6
    pgd = rec[rec["attack"] == "pgd"]
    assert (pgd["forward_passes"] == 21).all() and (pgd["backward_passes"] == 20).all()
    fgsm = rec[rec["attack"] == "fgsm"]
    assert (fgsm["forward_passes"] == 2).all() and (fgsm["backward_passes"] == 1).all()


def test_large_eps_breaks_white_box_attacks():
    res = evaluate_full(models="digits-deit", eps="0.5", n_examples=30, attacks=",".join(WHITE_BOX))
    s = res.summary
    for attack in WHITE_BOX:
        assert s[s["attack"] == attack]["top1"].iloc[0] <= 5.0, attack


def test_apgd_ce_equals_autoattack_code(model, batch):
    x, y = batch
    ours = create("apgd-ce", model, eps=4 / 255, seed=3, n_iter=25)(x, y)
    reference = APGDAttack(model, n_iter=25, eps=4 / 255, seed=3, norm="Linf", device=x.device).perturb(x.clone(), y.clone())
    with torch.no_grad():
        ours_ok = model(ours).argmax(1) == y
        ref_ok = model(reference).argmax(1) == y
    assert torch.equal(ours_ok, ref_ok)
    assert 0 < ref_ok.float().mean() < (model(x).argmax(1) == y).float().mean()


def test_apgd_ce_with_per_example_starts_equals_autoattack_from_the_same_start(model, batch):
    """The engine's path: starts drawn per example, handed to AutoAttack's own code as its x_init."""
    x, y = batch
    attack = create("apgd-ce", model, eps=4 / 255, seed=3, n_iter=25)
    examples = list(range(100, 100 + len(y)))
    ours = attack(x, y, examples=examples)
    attack.examples = examples  # the start the call above drew, drawn again for the reference
    start = attack.apgd_start(x, torch.arange(len(y)), "restart", 0)
    attack.examples = None
    reference = APGDAttack(model, n_iter=25, eps=4 / 255, seed=3, norm="Linf", device=x.device)
    reference.init_hyperparam(x)
    _, acc, _, _ = reference.attack_single_run(x.clone(), y.clone(), start)
    with torch.no_grad():
        clean_ok = model(x).argmax(1) == y
        ours_ok = model(ours).argmax(1) == y
    assert torch.equal(ours_ok[clean_ok], acc.bool()[clean_ok])
    assert (start - x).abs().amax() <= 4 / 255 + 1e-7


@pytest.mark.parametrize("name", ["apgd-ce", "apgd-t"])
def test_misclassified_examples_riding_along_give_the_points_of_their_own_run(name, monkeypatch):
    """The engine's calls attack the misclassified examples in the first run of the correct ones: the
    same points as their own run (fewer APGD runs, the same passes), and their top-5 still attacked."""
    model = robeval.load_model("digits-deit-elliptical")
    x, y = digits_split("test")
    x, y = torch.from_numpy(x[:40]), torch.from_numpy(y[:40])
    with torch.no_grad():
        wrong = model(x).argmax(1) != y
    assert 0 < int(wrong.sum()) < len(y)  # the batch has both kinds
    runs: list[int] = []
    single_run = APGDAttack.attack_single_run

    def counted(self, xs, ys, x_init=None):
        runs.append(len(ys))
        return single_run(self, xs, ys, x_init)

    monkeypatch.setattr(APGDAttack, "attack_single_run", counted)
    settings = {"n_iter": 5, "n_target_classes": 2} if name == "apgd-t" else {"n_iter": 5}
    attack = create(name, model, eps=8 / 255, seed=1, **settings)
    examples = list(range(len(y)))
    riding = attack(x, y, examples=examples)
    riding_runs, runs[:] = list(runs), []
    monkeypatch.setattr(type(attack), "rides_along", False)
    alone = attack(x, y, examples=examples)
    assert len(runs) == len(riding_runs) + 1 and riding_runs[0] == len(y) and sum(runs) == sum(riding_runs)
    assert (riding - alone).abs().max() < 1e-6
    with torch.no_grad():
        moved = (riding - x)[wrong].flatten(1).abs().amax(1)
    assert (moved > 0).all()  # the misclassified examples were attacked


@pytest.mark.parametrize("name", ["fgsm", "pgd"])
def test_fgsm_and_pgd_equal_torchattacks(model, batch, name):
    import torchattacks

    x, y = batch
    eps = 8 / 255
    if name == "fgsm":
        ours = create("fgsm", model, eps=eps)(x, y)
        reference = torchattacks.FGSM(model, eps=eps)(x, y)
    else:
        ours = create("pgd", model, eps=eps, steps=10, rel_stepsize=0.25, random_start=False)(x, y)
        reference = torchattacks.PGD(model, eps=eps, alpha=eps / 4, steps=10, random_start=False)(x, y)
    assert (ours - reference).abs().max() < 1e-6


def test_apgd_t_and_fab_t_use_nine_targets(model, batch, monkeypatch):
    x, y = batch
    targets, ranks = [], []
    run_apgd = APGDAttack_targeted.attack_single_run
    run_fab = FABAttack_PT.attack_single_run

    def spy_apgd(self, xs, ys, x_init=None):
        targets.append((self.y_target.clone(), ys.clone()))
        return run_apgd(self, xs, ys, x_init)

    def spy_fab(self, xs, ys=None, use_rand_start=False, is_targeted=False):
        ranks.append(self.target_class)
        return run_fab(self, xs, ys, use_rand_start, is_targeted)

    monkeypatch.setattr(APGDAttack_targeted, "attack_single_run", spy_apgd)
    monkeypatch.setattr(FABAttack_PT, "attack_single_run", spy_fab)
    create("apgd-t", model, eps=0.0, n_iter=2)(x, y)  # eps 0: nobody is fooled, every target runs
    create("fab-t", model, eps=0.0, n_iter=2)(x, y)
    correct_runs = [t for t in targets if len(t[1]) == int((model(x).argmax(1) == y).sum())]
    assert len(correct_runs) == 9
    stacked = torch.stack([t for t, _ in correct_runs], 1)
    assert (stacked != correct_runs[0][1][:, None]).all()  # never the true class
    assert all(len(set(row.tolist())) == 9 for row in stacked)  # nine different targets each
    assert ranks == list(range(2, 11))


def test_same_seed_same_records_and_no_rng_leak():
    kw = dict(models="digits-deit", eps="8/255", n_examples=20, settings=FAST_SETTINGS)
    a = evaluate_full(attacks="pgd,square,spsa", **kw).records
    b = evaluate_full(attacks="pgd,square,spsa", **kw).records
    pd.testing.assert_frame_equal(a.drop(columns="run_id"), b.drop(columns="run_id"))
    alone = evaluate_full(attacks="pgd", **kw).records
    after_aa = evaluate_full(attacks="apgd-ce,square,pgd", **kw).records
    cols = ["example", "adv_top1", "adv_pred", "linf", "l2"]
    pd.testing.assert_frame_equal(alone[alone.attack == "pgd"][cols].reset_index(drop=True),
                                  after_aa[after_aa.attack == "pgd"][cols].reset_index(drop=True))
    other = evaluate_full(attacks="pgd", seed=1, **kw).records
    assert not other[other.attack == "pgd"]["l2"].reset_index(drop=True).equals(alone[alone.attack == "pgd"]["l2"].reset_index(drop=True))


def test_out_of_ball_result_aborts_naming_the_attack(monkeypatch):
    from robeval.attacks.gradient import FGSM

    monkeypatch.setattr(FGSM, "perturb", lambda self, x, y: (x + 2 * self.eps).clamp(0, 1))
    res = evaluate_full(models="digits-deit", eps="8/255", n_examples=10, attacks="fgsm")  # stops the model
    assert res.info["status"] == "failed" and "attack fgsm left the Linf ball" in res.info["failed_models"]["digits-deit"]
    assert "fgsm" not in set(res.summary["attack"])  # nothing of the attack is counted
    x = torch.full((2, 1, 8, 8), 0.995)
    with pytest.raises(AttackBoundsError, match="input range"):
        verify_adversarial("pgd", x + 0.009, x, 0.01, "Linf", (0.0, 1.0))
    verify_adversarial("pgd", x + 0.005, x, 0.01, "Linf", (0.0, 1.0))
    verify_adversarial("pgd", x + 0.009, x, 0.01, "Linf", None)  # no box (nielsen2024's fgsm/pgd/spsa)


def test_spsa_gradient_estimate_points_the_right_way(model, batch):
    x, y = batch
    attack = SPSA(model, eps=0.1, samples=256, delta=0.01, lr=0.01, iterations=1, max_batch=4096, random_start=False, early_stop=False)
    torch.manual_seed(0)
    estimate = attack.estimate_gradient(x[:8], y[:8])
    xg = x[:8].clone().requires_grad_(True)
    logits = model(xg)
    true = logits.gather(1, y[:8, None]).squeeze(1)
    other = logits.scatter(1, y[:8, None], float("-inf")).amax(1)
    (exact,) = torch.autograd.grad((true - other).sum(), xg)
    cos = torch.nn.functional.cosine_similarity(estimate.flatten(1), exact.flatten(1))
    assert (cos > 0.5).all(), cos


def test_python_api_create_norms_and_settings(model, batch):
    x, y = batch
    x_adv = create("pgd", model, eps=0.5, norm="L2", steps=5)(x, y)
    assert ((x_adv - x).flatten(1).norm(dim=1) <= 0.5 + 1e-5).all() and x_adv.min() >= 0 and x_adv.max() <= 1
    with pytest.raises(UserError, match="does not support norm L2"):
        create("spsa", model, eps=0.5, norm="L2")
    with pytest.raises(UserError, match="valid keys"):
        create("square", model, eps=0.1, queries=10)


def test_nielsen2024_protocol_runs_and_is_labeled(tmp_path):
    res = evaluate_full(models=["digits-deit", "digits-deit-elliptical"], eps="8/255", n_examples=20,
                        attacks="fgsm,pgd,spsa,apgd-ce", protocol="nielsen2024", settings=FAST_SETTINGS, out=tmp_path)
    assert set(res.summary["protocol"]) == {"nielsen2024"}
    assert res.info["protocol"]["valid_threat_model"] is False
    assert res.info["protocol"]["labels"]["pgd"] == "predicted" and res.info["protocol"]["labels"]["apgd-ce"] == "true"
    assert res.info["attack_settings"]["pgd"]["rel_stepsize"] == 0.15
    assert res.info["models"]["digits-deit-elliptical"]["options"]["token_reduction"] == "median"
    assert "not a pixel-space threat model" in (tmp_path / "results.md").read_text()
    assert "nielsen2024" in (tmp_path / "results.csv").read_text()

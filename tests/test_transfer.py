"""Transfer attacks: crafted once per run on the source model, eps-checked, flagged when they beat white-box ones."""

from __future__ import annotations

from robeval.api import evaluate_full


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
    assert res.info["attack_implementations"]["transfer-pgd"].startswith("robeval PGD on --source-model")


def test_transfer_below_white_box_is_flagged():
    import pandas as pd

    from robeval.results.soundness import run_findings

    summary = pd.DataFrame([{"model": "m", "eps": "8/255", "eps_value": 8 / 255, "attack": a, "top1": v, "n": 100}
                            for a, v in (("clean", 90.0), ("pgd", 60.0), ("apgd-ce", 58.0), ("transfer-pgd", 30.0))])
    flags = run_findings(summary, {})["flags"]
    assert [f["check"] for f in flags] == ["transfer-beats-white-box"] and "transfer-pgd" in flags[0]["message"]


def test_transfer_errors_are_one_line():
    import pytest

    from robeval.core.errors import UserError

    for kwargs, message in (
        (dict(attacks="transfer-pgd"), "needs --source-model"),
        (dict(attacks="pgd", source_model="digits-deit"), "--source-model is for transfer attacks"),
        (dict(attacks="transfer-pgd", source_model="rvt-tiny=x.pth"), "checkpoint file not found"),
        (dict(attacks="transfer-pgd", source_model="deit-tiny", weights="random"), "takes input (3, 224, 224)"),
        (dict(attacks="transfer-pgd", source_model="digits-deit", protocol="nielsen2024"), "pixel-space protocol"),
    ):
        with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
            evaluate_full(models="digits-deit", n_examples=10, **kwargs)


SOURCE_CODE = '''
import robeval
from torch import nn

BUILT = []


def build():
    BUILT.append(1)
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 10)), robeval.ModelConfig(input_size=(1, 8, 8), num_classes=10)
'''


def test_a_source_model_of_the_users_code_is_built_once(tmp_path):
    """Admission and the run share the module built when the run was planned (issue 61, item 1)."""
    from robeval.models.user_code import import_file

    path = tmp_path / "source_net.py"
    path.write_text(SOURCE_CODE)
    res = evaluate_full(models="digits-deit", attacks="transfer-pgd", source_model=f"{path}:build", n_examples=4,
                        settings={"transfer-pgd": {"steps": 2}}, device="cpu")  # fmt: skip
    assert "transfer-pgd" in set(res.summary["attack"])
    assert import_file(path).BUILT == [1]

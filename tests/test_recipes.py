"""Recipes compared (robeval.models.recipes): two models trained otherwise, members trained otherwise,
and weights that record no recipe are said in compare's verdict, caveats (never flags) of check, and shown
in the report; models trained alike say nothing."""

from __future__ import annotations

import pytest
import torch

import robeval
from robeval.models.checkpoint import open_checkpoint
from robeval.models.recipes import recipe_differences
from robeval.zoo import zoo_path

from .conftest import invoke


def test_a_files_recipe_is_read_from_robevals_metadata_and_from_a_training_checkpoints_args(tmp_path):
    import argparse

    assert open_checkpoint(zoo_path("digits-deit")).recipe == {"epochs": "300", "lr": "0.001", "stochastic depth": "0.1",
                                                        "seed": "0", "data": "digits (training split)"}  # fmt: skip
    state = robeval.load_model("digits-deit").net.state_dict()
    args = argparse.Namespace(model="deit_tiny_patch16_224", epochs=300, lr=5e-4, sched="cosine", data_set="IMNET",
                              seed=0, drop_path=0.1, batch_size=256, output_dir="out")  # fmt: skip
    torch.save({"model": state, "args": args}, tmp_path / "checkpoint.pth")
    torch.save(state, tmp_path / "bare.pth")
    found = open_checkpoint(tmp_path / "checkpoint.pth").recipe
    assert found == {"epochs": "300", "lr": "0.0005", "schedule": "cosine", "batch size": "256",
                     "stochastic depth": "0.1", "data": "IMNET", "seed": "0"}  # fmt: skip
    assert open_checkpoint(tmp_path / "bare.pth").recipe is None
    assert recipe_differences({"epochs": "30", "lr": "1e-3", "seed": "1"}, {"epochs": "300", "lr": "0.001", "seed": "2"}) == [
        "epochs 30 vs 300"]  # the seed is what members differ in; 1e-3 is 0.001  # fmt: skip


@pytest.fixture(scope="module")
def unlike(tmp_path_factory):
    """digits-deit (stochastic depth 0.1) beside digits-rvt (trained without it), and a bare state dict."""
    folder = tmp_path_factory.mktemp("recipes")
    torch.save(robeval.load_model("digits-deit").net.state_dict(), folder / "bare.pth")
    store = folder / "s.sqlite"
    run = robeval.evaluate_full(models=["digits-deit", "digits-rvt"], n_examples=8, attacks="fgsm", store=store,
                                progress=False)  # fmt: skip
    bare = robeval.evaluate_full(models=["digits-deit", "digits-deit-elliptical"], n_examples=8, attacks="fgsm",
                                 checkpoints={"digits-deit": str(folder / "bare.pth")}, store=store, progress=False)  # fmt: skip
    return folder, store, run, bare


def test_two_models_trained_otherwise_are_said_in_compare_check_and_the_report(unlike):
    folder, store, run, _ = unlike
    said = str(run.compare("digits-deit", "digits-rvt"))
    assert "note: A and B were trained with different recipes (A vs B: stochastic depth 0.1 vs 0)" in said
    assert not [f for f in run.check().flags if f.check == "recipe"]  # a caveat on the claim, no failed attack
    (caveat,) = [f for f in run.check().caveats if f.check == "recipe" and f.model == "digits-deit"]
    assert "digits-rvt: stochastic depth 0.1 vs 0" in caveat.evidence and caveat.gist == "recipes differ"
    written = invoke(["report", run.run_id, "--store", str(store), "--out", "r.html", "--gallery-size", "0"], folder)
    page = (folder / "r.html").read_text()
    assert written.returncode == 0 and page.count("trained with different recipes") >= 1
    assert "recipes differ (this model&#x27;s vs the other&#x27;s): digits-rvt: stochastic depth 0.1 vs 0" in page


def test_an_unknown_recipe_is_said_to_be_unknown(unlike):
    _, _, _, bare = unlike
    said = str(bare.compare("digits-deit", "digits-deit-elliptical"))
    assert "training recipe of" in said and "digits-deit is unknown" in said
    found = {f.model: f for one in bare.check().judged.models for f in one.findings if f.check == "recipe"}
    assert found["digits-deit"].status == "CAVEAT" and "recipe unknown for digits-deit" in found["digits-deit"].evidence
    assert not [f for f in bare.check().flags if f.check == "recipe"]


def test_members_trained_otherwise_are_a_caveat(tmp_path):
    from .test_train_seeds import CODE

    (tmp_path / "code.py").write_text(CODE)
    for epochs, out in (("3", "a.safetensors"), ("4", "b.safetensors")):
        done = invoke(
            ["train-demo", "-m", "./code.py:linear", "--epochs", epochs, "--lr", "5e-2", "--out", out], tmp_path
        )
        assert done.returncode == 0, done.stderr
    result = invoke(["run", "-m", "./code.py:linear=lin", "-m", "digits-deit", "--checkpoint", "lin=a.safetensors,b.safetensors",
                     "-n", "8", "--attacks", "fgsm", "--store", "s.sqlite", "--out", "o"], tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    caveats = result.stdout.split("Caveats on the claim (no sign of a failed attack): ")[1]
    assert "[recipe] lin: recipes differ (this model's vs the other's): its member 2: epochs 3 vs 4" in caveats
    compared = invoke(["compare", "lin", "digits-deit", "--store", "s.sqlite"], tmp_path)
    assert "note: the members of" in compared.stdout and "epochs 3 vs 4" in compared.stdout


def test_models_trained_alike_say_nothing():
    run = robeval.evaluate_full(models=["digits-deit", "digits-deit-elliptical"], n_examples=8, attacks="fgsm",
                                progress=False)  # fmt: skip
    assert "recipe" not in str(run.compare("digits-deit", "digits-deit-elliptical"))
    found = [f for one in run.check().judged.models for f in one.findings if f.check == "recipe"]
    assert {f.status for f in found} == {"ok"} and "one recipe: epochs 300, lr 0.001" in found[0].evidence


def test_a_recipe_a_file_records_only_shows():
    """A checkpoint's recipe is text from outside: one line, its control characters as escapes, bounded."""
    from robeval.models.recipes import robeval_recipe

    found = robeval_recipe({"epochs": "3\n  [recipe] forged line", "lr": "x" * 1000, "stochastic_depth": "0.1"})
    assert found["epochs"] == "3\\n  [recipe] forged line" and len(found["lr"]) == 200

"""``robeval train-demo --seeds``: several members of one model, one recipe, one file per seed, the spread
printed; each seed as honest as one (nothing written for a seed that diverged, an existing file refused
without --force, weights that load back with the printed accuracy); and one recipe for the shipped
demo models and train-demo's default."""

from __future__ import annotations

import glob
import hashlib
import re
import statistics

import pytest
import torch

import robeval
from robeval.core.defaults import DEMO_RECIPE
from robeval.core.errors import UserError
from robeval.core.seeds import parse_seeds

from .conftest import one_line_error

CODE = '''
import torch
from torch import nn

import robeval


def linear():
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 10)), robeval.ModelConfig(input_size=(1, 8, 8))


def flaky():
    """Diverges when built by seed 1 (a NaN weight), trains otherwise."""
    net, config = linear()
    if torch.initial_seed() == 1:
        net[1].bias.data[0] = float("nan")
    return net, config
'''
QUICK = ["--epochs", "3", "--lr", "5e-2"]  # a linear model learns the digits in three epochs


@pytest.fixture()
def code(tmp_path):
    (tmp_path / "code.py").write_text(CODE)
    return tmp_path


def digest(folder) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}  # fmt: skip


@pytest.mark.parametrize(
    "text, seeds", [("0-4", [0, 1, 2, 3, 4]), ("0,2,5", [0, 2, 5]), ("0-2,7", [0, 1, 2, 7]), (" 3 ", [3])]
)
def test_seeds_are_a_range_a_list_or_both(text, seeds):
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize("text", ["0-x", "4-1", "1,1", "", "0,", "-1", "0-", "0-5000", "1.5"])
def test_a_seeds_list_of_another_shape_is_one_line(text, cli):
    with pytest.raises(UserError, match="--seeds"):
        parse_seeds(text)
    assert one_line_error(cli("train-demo", "-m", "digits-deit", "--seeds", text, "--out", "members"), "--seeds")


def printed_accuracies(stdout: str) -> dict[int, float]:
    return {int(s): float(a) for s, a in re.findall(r"seed (\d+): clean accuracy ([\d.]+)%", stdout)}


def accuracy_of(model: str, path, folder) -> float:
    """Top-1 on the digits test split of ``model`` with the weights at ``path``, loaded as `robeval run` loads them."""
    import os

    from robeval.data.digits import digits_split

    x, y = (torch.from_numpy(a) for a in digits_split("test"))
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        loaded = robeval.load_model(model, checkpoint=path)
    finally:
        os.chdir(cwd)
    with torch.no_grad():
        return 100 * float((loaded(x).argmax(1) == y).float().mean())


def test_seeds_write_one_member_each_that_load_back_with_the_printed_accuracy_and_the_spread(code, cli):
    result = cli("train-demo", "-m", "./code.py:linear", "--seeds", "0,2", *QUICK, "--out", "members/")
    assert result.returncode == 0, result.stderr
    printed = printed_accuracies(result.stdout)
    files = sorted(glob.glob(str(code / "members" / "code.py-linear-seed*.safetensors")))
    assert set(printed) == {0, 2} and [f.rsplit("-", 1)[1] for f in files] == ["seed0.safetensors", "seed2.safetensors"]
    for seed, path in zip((0, 2), files):
        assert f"{accuracy_of('./code.py:linear', path, code):.2f}" == f"{printed[seed]:.2f}"
    mean, std = (float(v) for v in re.search(r"clean accuracy ([\d.]+) ± ([\d.]+)% over 2 seeds", result.stdout).groups())
    assert mean == pytest.approx(statistics.fmean(printed.values()), abs=0.01)
    assert std == pytest.approx(statistics.stdev(printed.values()), abs=0.01)
    said = re.search(r"the files: '([^']+)'", result.stdout).group(1)  # a quoted glob that names them all
    assert sorted(glob.glob(str(code / said))) == files
    assert "not the shipped models'" in result.stdout  # a shorter recipe is said to be one
    epochs = int(QUICK[QUICK.index("--epochs") + 1])
    for seed in (0, 2):  # not a terminal: the progress as lines, each seed's epochs up to the last, with the loss
        shown = re.findall(rf"train \./code\.py:linear seed {seed}: epoch (\d+)/{epochs}, loss [\d.]+", result.stdout)
        assert shown and int(shown[-1]) == epochs and shown == sorted(shown, key=int)
    from safetensors import safe_open

    with safe_open(files[1], "pt") as f:
        meta = f.metadata()
    assert (meta["seed"], meta["epochs"], meta["lr"], meta["trained_by"]) == ("2", "3", "0.05", "robeval train-demo")


def test_an_existing_member_is_refused_before_any_training_unless_forced(code, cli):
    first = cli("train-demo", "-m", "./code.py:linear", "--seeds", "1", *QUICK, "--out", "members")
    assert first.returncode == 0, first.stderr
    before = digest(code)
    again = cli("train-demo", "-m", "./code.py:linear", "--seeds", "0-1", *QUICK, "--out", "members")
    assert one_line_error(again, "code.py-linear-seed1.safetensors exists", "--force")
    assert digest(code) == before  # seed 0 was not trained either: the refusal comes first
    forced = cli("train-demo", "-m", "./code.py:linear", "--seeds", "0-1", *QUICK, "--out", "members", "--force")
    assert forced.returncode == 0 and set(printed_accuracies(forced.stdout)) == {0, 1}


def test_a_seed_that_diverges_writes_nothing_and_the_others_are_written(code, cli):
    result = cli("train-demo", "-m", "./code.py:flaky", "--seeds", "0-2", *QUICK, "--out", "members")
    assert one_line_error(result, "seed 1 of ./code.py:flaky wrote nothing", "the other seeds are written")
    assert "seed 1: training diverged" in result.stdout and set(printed_accuracies(result.stdout)) == {0, 2}
    assert sorted(p.name for p in (code / "members").iterdir()) == [
        "code.py-flaky-seed0.safetensors", "code.py-flaky-seed2.safetensors"]  # fmt: skip
    one = cli("train-demo", "-m", "./code.py:flaky", "--seed", "1", *QUICK, "--out", "one.pth")
    assert one_line_error(one, "training diverged", "nothing was written") and not (code / "one.pth").exists()


@pytest.mark.parametrize(
    "args, words",
    [
        (["--seed", "1", "--seeds", "0-2", "--out", "members"], ["--seed N", "--seeds LIST", "not both"]),
        (["--seeds", "0-2", "--out", "w.pth"], ["3 seeds write one file each", "name a folder"]),
        (["--seeds", "0-2", "--out", "w.txt"], ["*.safetensors", "or a folder"]),
    ],
)
def test_seeds_and_out_that_do_not_fit_are_one_line(code, cli, args, words):
    assert one_line_error(cli("train-demo", "-m", "./code.py:linear", *args), *words)
    assert digest(code) == {"code.py": hashlib.sha256(CODE.encode()).hexdigest()}


def test_train_demo_default_is_the_recipe_the_shipped_demo_models_were_trained_with():
    """One recipe: train-demo's defaults, the shipped digits-deit's and digits-deit-elliptical's (as their
    files say), and the same code path — a network built by the zoo script's old way (drop_path_rate
    0.1 at build time) trains to the very weights train-demo gives."""
    import inspect

    from robeval.cli.train import train_demo_cmd
    from robeval.models.seed_training import recipe_note, shipped_recipe
    from robeval.models.training import train_demo, train_network
    from robeval.models.vits import digits_vit

    defaults = inspect.signature(train_demo_cmd).parameters
    assert (defaults["epochs"].default.default, defaults["lr"].default.default) == DEMO_RECIPE[:2]
    assert inspect.signature(train_demo).parameters["epochs"].default == DEMO_RECIPE.epochs
    for name, elliptical in (("digits-deit", False), ("digits-deit-elliptical", True)):
        assert shipped_recipe(name) == DEMO_RECIPE and "with the same recipe" in recipe_note(name, DEMO_RECIPE)
        trained, acc = train_demo(name, epochs=2, seed=3, lr=DEMO_RECIPE.lr)
        torch.manual_seed(3)
        built = digits_vit(elliptical=elliptical, drop_path_rate=DEMO_RECIPE.stochastic_depth)
        scripted, scripted_acc = train_network(built, 2, 3, lr=DEMO_RECIPE.lr)
        assert acc == scripted_acc
        assert all(torch.equal(a, b) for a, b in zip(trained.state_dict().values(), scripted.state_dict().values()))
    shorter = DEMO_RECIPE._replace(epochs=30)
    assert "trained otherwise" in recipe_note("digits-deit", shorter)
    assert "trained otherwise" in recipe_note("digits-rvt", DEMO_RECIPE)  # shipped without stochastic depth
    assert "the recipe of the shipped digits-deit" in recipe_note("./net.py:build", DEMO_RECIPE)

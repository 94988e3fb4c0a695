"""SPSA (issue 31): ``samples`` counts +/- pairs, the evaluations it spends and says it spent, the
authors' procedure under nielsen2024, robeval's never weaker than it, torchattacks' agreement at
equal pairs, and runs stored when ``samples`` counted evaluations."""

from __future__ import annotations

import json
import sqlite3

import pytest
import torch

import robeval
from robeval.api import evaluate_full
from robeval.attacks import create
from robeval.attacks.convergence import CurveWatch, reading
from robeval.data.digits import digits_split
from robeval.data.subsets import balanced_subset
from robeval.evaluation.attack_guards import PassCounter
from robeval.evaluation.protocols import PROTOCOLS
from robeval.results.runs import load_run
from robeval.store import Store

from .conftest import one_line_error, run_cli

DEMO_MODELS = ("digits-deit", "digits-deit-elliptical")
EPS = 8 / 255


def demo_digits(n: int) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """The first ``n`` class-balanced test digits (the run's own selection), with their indices."""
    images, labels = digits_split("test")
    idx = balanced_subset(labels.tolist(), n)
    return torch.from_numpy(images[idx]), torch.from_numpy(labels[idx]), idx


def authors_settings(**overrides) -> dict:
    """The SPSA settings ``--protocol nielsen2024`` runs (the authors' procedure), with ``overrides``."""
    return {**PROTOCOLS.require("nielsen2024").settings_for("spsa"), **overrides}


def robust_top1(model, x_adv: torch.Tensor, y: torch.Tensor) -> float:
    with torch.inference_mode():
        return 100.0 * float((model(x_adv).argmax(1) == y).float().mean())


def test_nielsen2024_runs_the_authors_procedure_and_standard_robevals():
    theirs, ours = authors_settings(), PROTOCOLS.require("standard").settings_for("spsa")
    assert theirs["samples"] == 128 and theirs["random_start"] and theirs["estimate_at_2x"]
    assert not theirs["keep_best"] and not theirs["early_stop"]
    assert ours == {}  # the class's defaults: best iterate, early stop, from the image
    spsa = create("spsa", torch.nn.Identity(), eps=EPS)
    assert spsa.samples == 128 and spsa.keep_best and spsa.early_stop and not spsa.random_start
    assert not spsa.estimate_at_2x


def test_spsa_spends_two_evaluations_per_pair_and_step_and_says_so():
    model = PassCounter(robeval.load_model("digits-deit").eval())
    x, y, idx = demo_digits(12)
    samples, iterations, n = 4, 6, len(y)
    theirs = create("spsa", model, eps=EPS, **authors_settings(iterations=iterations, samples=samples))
    model.reset()
    theirs(x, y, seed=0, examples=idx)
    assert model.forward_images == n * 2 * samples * iterations  # no evaluation of the iterates
    assert theirs.evaluations.tolist() == [2 * samples * iterations] * n and theirs.steps.tolist() == [iterations] * n
    plain = theirs(x, y, seed=0, examples=idx)
    # a watched call (convergence curves) evaluates the start and every new iterate
    watched = create("spsa", CurveWatch(model, marked=True), eps=EPS, **authors_settings(iterations=iterations, samples=samples))
    model.reset()
    with reading(watched.model, y):
        assert torch.equal(watched(x, y, seed=0, examples=idx), plain)  # and returns the same points
    assert model.forward_images == n * (1 + iterations * (2 * samples + 1)) == int(watched.evaluations.sum())

    ours = create("spsa", model, eps=32 / 255, iterations=iterations, samples=samples)  # large eps: some stop early
    model.reset()
    x_adv = ours(x, y, seed=0, examples=idx)
    assert model.forward_images == int(ours.evaluations.sum())
    assert ours.evaluations.tolist() == (1 + ours.steps * (2 * samples + 1)).tolist()
    stopped = ours.steps < iterations
    assert stopped.any() and (~stopped).any(), ours.steps
    with torch.inference_mode():
        assert (model(x_adv).argmax(1) != y)[stopped].all()  # only a fooled example stops early
        assert (model(x).argmax(1) == y)[stopped].all()  # one misclassified from the start runs on


@pytest.mark.parametrize("name", DEMO_MODELS)
def test_robevals_spsa_is_never_weaker_than_the_authors_procedure(name):
    """On the same digits, seed and budget (true labels, [0,1] pixels, as the issue measured; 10
    iterations x 16 pairs keep it quick: the gap is 22 and 12 points here, 21 at the full 40 x 128 on
    100 digits, benchmarks/spsa_vs_torchattacks.py --authors)."""
    model = robeval.load_model(name).eval()
    x, y, idx = demo_digits(50)
    budget = dict(iterations=10, samples=16)
    ours = robust_top1(model, create("spsa", model, eps=EPS, seed=0, **budget)(x, y, examples=idx), y)
    attack = create("spsa", model, eps=EPS, seed=0, **authors_settings(**budget))
    theirs = robust_top1(model, attack(x, y, examples=idx), y)
    assert ours <= theirs - 5, (ours, theirs)


@pytest.mark.parametrize("name", DEMO_MODELS)
def test_robevals_spsa_agrees_with_torchattacks_at_equal_pairs(name):
    """100 demo digits, the same pairs per step (torchattacks' ``nb_sample`` counts pairs too), 10
    iterations x 8 pairs: robust top-1 within 2 points (at the full 40 x 128 and 3 seeds:
    benchmarks/spsa_vs_torchattacks.py)."""
    torchattacks = pytest.importorskip("torchattacks")
    model = robeval.load_model(name).eval()
    x, y, idx = demo_digits(100)
    budget = dict(iterations=10, samples=8)
    ours = robust_top1(model, create("spsa", model, eps=EPS, seed=0, **budget)(x, y, examples=idx), y)
    torch.manual_seed(0)
    attack = torchattacks.SPSA(model, eps=EPS, delta=0.01, lr=0.01, nb_iter=budget["iterations"],
                               nb_sample=budget["samples"])
    theirs = robust_top1(model, attack(x, y), y)
    assert abs(ours - theirs) <= 2.0, (ours, theirs)


def store_as_before_pairs(path, run_id: str) -> None:
    """Rewrite a stored run's SPSA settings as robeval stored them before ``samples`` counted pairs:
    ``samples`` = evaluations per step (2 x pairs), no ``keep_best``, no ``estimate_at_2x``."""
    conn = sqlite3.connect(path)
    with conn:
        for column in ("config", "info"):
            (text,) = conn.execute(f"SELECT {column} FROM runs WHERE id = ?", (run_id,)).fetchone()
            stored = json.loads(text)
            spsa = stored["attack_settings"]["spsa"]
            spsa["samples"] *= 2
            del spsa["keep_best"], spsa["estimate_at_2x"]
            conn.execute(f"UPDATE runs SET {column} = ? WHERE id = ?", (json.dumps(stored), run_id))
    conn.close()


def test_a_run_stored_when_samples_counted_evaluations_shows_its_pairs_and_never_mixes(tmp_path):
    store = tmp_path / "s.sqlite"

    def run(pairs: int) -> str:
        return evaluate_full(models="digits-deit", n_examples=10, eps="8/255", attacks="spsa", store=str(store),
                             out=tmp_path / "{run_id}", settings={"spsa": {"iterations": 2, "samples": pairs}}).run_id

    old, new, same = run(8), run(16), run(8)
    store_as_before_pairs(store, old)  # it stored samples=16 for its 8 pairs
    read = load_run(Store(store), old)
    assert read.info["attack_settings"]["spsa"]["samples"] == 8 and read.config["attack_settings"]["spsa"]["samples"] == 8
    assert read.info["attack_settings"]["spsa"]["keep_best"] is True  # what every run kept then
    assert json.loads(read.summary.set_index("attack").loc["spsa", "settings"])["samples"] == 8  # the table's settings
    mixed = run_cli("table", old, new, "--store", str(store))
    assert one_line_error(mixed, "differ in attack settings (spsa samples 8 vs 16)", "a table never mixes them"), mixed.stderr
    compared = run_cli("compare", f"{old}:digits-deit", f"{new}:digits-deit", "--store", str(store))
    assert one_line_error(compared, "attack settings (spsa samples 8 vs 16)", "like with like"), compared.stderr
    together = run_cli("table", old, same, "--store", str(store), "-f", "csv")  # the same 8 pairs ran in both
    assert together.returncode == 0 and together.stdout.count("digits-deit") >= 2, together.stderr

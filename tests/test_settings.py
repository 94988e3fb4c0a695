"""Run options and attack settings: validated against their meaning before any work, and what is
stored is what ran."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from robeval.api import evaluate_full
from robeval.attack_settings import SETTING_LIMITS
from robeval.attacks import list_attacks

from .conftest import one_line_error


@pytest.mark.parametrize("spec", list_attacks(), ids=lambda s: s.name)
def test_every_numeric_setting_has_a_meaning_its_default_meets(spec):
    for key, default in spec.defaults.items():
        if isinstance(default, bool) or not isinstance(default, (int, float)):
            continue
        assert key in SETTING_LIMITS, f"{spec.name}.{key} has no limit in robeval.attack_settings"
        assert SETTING_LIMITS[key].allows(default), f"{spec.name}.{key}={default} breaks its own limit"


@pytest.mark.parametrize("args, words", [
    (["--set", "spsa.samples=0"], ["spsa.samples must be at least 1", "+/- direction pairs"]),
    (["--set", "spsa.samples=1.5"], ["spsa.samples must be a whole number"]),
    (["--attacks", "pgd", "--set", "pgd.steps=0"], ["pgd.steps must be at least 1"]),
    (["--attacks", "fgsm", "--set", "fgsm.eot_iter=0"], ["fgsm.eot_iter must be at least 1"]),
    (["--attacks", "square", "--set", "square.p_init=1.5"], ["square.p_init must be", "at most 1"]),
    (["--attacks", "pgd", "--set", "pgd.rel_stepsize=nan"], ["pgd.rel_stepsize must be above 0"]),
    (["--attacks", "pgd", "--set", "square.n_queries=10"], ["square is not among the attacks of this run (pgd)"]),
    (["--attacks", ""], ["--attacks names no attack"]),
    (["--attacks", " , "], ["--attacks names no attack"]),
    (["--eps", "8/255,0.0313725490196"], ["--eps 8/255 and 0.0313725490196 are the same budget"]),
    (["--seed", "99999999999999999999"], ["--seed must be a whole number from 0 to"]),
    (["--seed", "-1"], ["--seed must be a whole number"]),
    (["--attacks", "apgd-t", "--set", "apgd-t.n_target_classes=50"], ["digits-deit has 10 classes", "at most 9"]),
    (["--attacks", "fab-t", "--set", "fab-t.n_target_classes=10"], ["at most 9"]),
    (["--batch-size", "0"], ["--batch-size must be at least 1"]),
    (["--weights", "pretrained"], ["invalid --weights"]),
])
def test_a_setting_that_means_nothing_is_one_line_before_any_work(cli, tmp_path, args, words):
    store = tmp_path / "s.sqlite"
    result = cli("run", "-n", "10", "--quiet", "--store", str(store), *args)
    assert one_line_error(result, *words), result.stderr
    assert not store.exists() and not (tmp_path / "results").exists()  # nothing created, nothing run


@pytest.mark.parametrize("args, words", [
    (["--model", "nope"], "unknown model 'nope'"), (["--eps", "9/0"], "division by zero"),
    (["--eps", "8/25x"], "invalid eps"), (["--seed", "-3"], "--seed"),
    (["--set", "pgd.steps=-1"], "pgd.steps must be at least 1"), (["--set", "spsa.samples=0"], "spsa.samples"),
    (["--model", "digits-*", "--attacks", "transfer-pgd"], "needs --source-model"),
    (["--source-model", "digits-deit"], "--source-model is for transfer attacks"),
    (["--attacks", "fmn", "--cascade"], "run it without --cascade"),
    (["--data", "digits", "--split", "train"], "--split applies to"),
    (["--set", "pgd.steps=3", "--attacks", "fgsm"], "pgd is not among the attacks"),
])
def test_a_wrong_option_answers_before_torch_loads(tmp_path, args, words):
    """make_config judges every option without torch: the run's validation is the library's, at once."""
    code = ("import sys\nfrom robeval.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit as exc:\n"
            "    print(exc.code, 'torch' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code, "run", *args], capture_output=True, text=True, cwd=tmp_path)
    assert proc.stdout.split() == ["2", "False"] and words in proc.stderr, (args, proc.stdout, proc.stderr)


def test_what_is_stored_is_what_ran():
    res = evaluate_full(models="digits-deit", n_examples=10, attacks="spsa",
                        settings={"spsa": {"samples": 8, "iterations": 2, "early_stop": False}})
    stored = res.info["attack_settings"]["spsa"]
    assert stored["samples"] == 8 and stored["iterations"] == 2
    row = res.summary.set_index("attack").loc["spsa"]
    # per example: one pass for the start, iterations x (8 +/- pairs + the new iterate), one final count
    assert row["forward_passes_per_example"] == 1 + 2 * (2 * 8 + 1) + 1
    json.dumps(res.info, default=str)  # run.json holds it as plain data


def test_a_budget_is_found_by_text_or_value():
    from robeval.core.eps import find_budget

    assert find_budget(["4/255", "8/255"], "0.0313725490196") == "8/255"
    assert find_budget(["8/255"], "0.03137", tolerance=5e-5) == "8/255" and find_budget(["8/255"], "0.03137") is None
    assert find_budget(["4/255"], "16/255") is None

"""The command a user types: files written, tables printed, and one-line errors with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

import robeval
from robeval.store import Store

from .conftest import run_cli


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    proc = run_cli("run", "-m", "digits-deit", "-m", "digits-deit-elliptical", "--n-examples", "20",
                   "--eps", "4/255,16/255", "--attacks", "fgsm,pgd,square", "--set", "square.n_queries=50",
                   "--out", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr
    return out, proc


def test_results_csv(small_run):
    out, _ = small_run
    df = pd.read_csv(out / "results.csv")
    assert list(df.columns[:8]) == ["model", "checkpoint", "attack", "eps", "norm", "n", "top1", "top5"]
    assert len(df) == 2 * 2 * 5  # models x eps x (clean, fgsm, pgd, square, any)
    assert set(df["attack"]) == {"clean", "fgsm", "pgd", "square", "any"}
    assert set(df["eps"]) == {"4/255", "16/255"} and (df["n"] == 20).all()
    assert df["top1"].between(0, 100).all() and (df["top5"] >= df["top1"]).all()
    assert (df["protocol"] == "standard").all()
    clean = df[df["attack"] == "clean"].set_index(["model", "eps"])["top1"]
    assert (clean >= 80).all()


def test_results_md_and_terminal(small_run):
    out, proc = small_run
    md = (out / "results.md").read_text()
    assert md.count("eps = 4/255") == 1 and md.count("eps = 16/255") == 1
    assert "data: digits, n = 20; protocol: standard" in md
    assert "| digits-deit-elliptical |" in md and " / " in md
    for col in ("Clean Top-1", "FGSM Top-5", "PGD Top-1", "Square Top-1", "Any (worst case) Top-5"):
        assert col in md.splitlines()[2]
    assert "digits-deit-elliptical" in proc.stdout and "results.csv" in proc.stdout
    printed = proc.stdout.split("Soundness checks")[0]  # the tables: their marks are results.md's
    assert "†" in md and printed.count("†") == md.count("†")


def test_run_json(small_run):
    out, _ = small_run
    run = json.loads((out / "run.json").read_text())
    assert run["seed"] == 0 and run["versions"]["torch"] and run["versions"]["timm"] and run["versions"]["robeval"]
    assert run["attack_settings"]["square"]["n_queries"] == 50
    assert run["attack_settings"]["pgd"] == {"steps": 20, "rel_stepsize": 0.25, "random_start": True, "eot_iter": 1}
    assert len(run["models"]["digits-deit"]["checkpoint_sha256"]) == 64
    assert run["protocol"]["name"] == "standard" and run["data"]["n"] == 20
    assert any(k.startswith("digits-deit|4/255|pgd") for k in run["timings_seconds"])


def test_passes_per_image_are_the_records_means_in_run_json_and_the_closing_summary(small_run):
    from robeval.core.defaults import DEFAULT_STORE

    from .conftest import SCRATCH

    out, proc = small_run
    run = json.loads((out / "run.json").read_text())
    store = Store(SCRATCH / DEFAULT_STORE)
    means = store.records(run["run_id"]).groupby(["model", "eps", "attack"])[["forward_passes", "backward_passes"]].mean()
    store.close()
    shown = run["passes_per_image"]
    assert {(m, e, a) for m in shown for e in shown[m] for a in shown[m][e]} == set(means.index)
    for (model, eps, attack), row in means.iterrows():
        assert shown[model][eps][attack] == pytest.approx({"forward": row.forward_passes, "backward": row.backward_passes}, abs=1e-4)
    assert shown["digits-deit"]["4/255"]["pgd"] == {"forward": 21.0, "backward": 20.0}  # 20 steps and the records' pass
    lines = [line.strip() for line in proc.stdout.splitlines()]
    line = next(line for line in lines if line.startswith("digits-deit at 4/255:"))
    square = shown["digits-deit"]["4/255"]["square"]["forward"]
    assert "clean 1/0, fgsm 2/1, pgd 21/20, " in line and f"square {square:.1f}/0".replace(".0/", "/") in line


def test_models_and_attacks_listings():
    proc = run_cli("models")
    assert proc.returncode == 0 and "deit-small-elliptical" in proc.stdout and "22.05M" in proc.stdout
    proc = run_cli("attacks")
    assert proc.returncode == 0 and "n_queries=5000" in proc.stdout and "pyautoattack" in proc.stdout


@pytest.mark.parametrize("args, message", [
    (["run", "-m", "deit-smal"], "unknown model 'deit-smal' (did you mean"),
    (["run", "-m", "digits-deit", "--checkpoint", "/nope/ckpt.pth"], "checkpoint file not found"),
    (["run", "--data", "/nope/imagenet/val", "-m", "digits-deit"], "data folder not found"),
    (["run", "--eps", "3/0"], "invalid eps '3/0'"),
    (["run", "--eps", "abc"], "invalid eps 'abc'"),
    (["run", "--eps", "nan"], "must be a finite number"),
    (["run", "--eps", "-1/255"], "must not be negative"),
    (["run", "--eps", "2"], "exceeds the [0,1] image range"),
    (["run", "--attacks", "pgd,cw"], "unknown attack 'cw'"),
    (["run", "--set", "pgd.stepz=3"], "valid keys: steps, rel_stepsize, random_start"),
    (["run", "--set", "pgd.steps=many"], "pgd.steps must be a whole number"),
    (["run", "--norm", "L2", "--attacks", "spsa"], "does not support norm L2"),
    (["run", "--protocol", "nielsen"], "unknown protocol 'nielsen'"),
    (["run", "-n", "0"], "must be at least 1"),
    (["run", "-n", "100000"], "more than the 449 images"),
])
def test_user_errors_are_one_line_exit_2(args, message):
    proc = run_cli(*args, "--out", "/tmp/robeval-test-unused", "--quiet")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], proc.stderr


def test_wrong_size_checkpoint_cli(deit_tiny_ckpt, image_folder):
    proc = run_cli("run", "-m", "deit-small", "--checkpoint", str(deit_tiny_ckpt), "--data", str(image_folder), "--quiet")
    assert proc.returncode == 2 and "another model size" in proc.stderr and "Traceback" not in proc.stderr


def test_no_weights_offline_says_how_to_pass_checkpoint(monkeypatch, image_folder):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    proc = run_cli("run", "-m", "deit-tiny", "--data", str(image_folder), "--quiet", timeout=120)
    assert proc.returncode == 2 and "pass --checkpoint PATH" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli("run", "-m", "deit-small-elliptical", "--quiet", timeout=120)
    assert proc.returncode == 2 and "no public weights; pass --checkpoint deit-small-elliptical=PATH" in proc.stderr


def test_image_folder_with_checkpoint(image_folder, deit_tiny_ckpt, tmp_path):
    proc = run_cli("run", "-m", "deit-tiny-elliptical", "--checkpoint", f"deit-tiny-elliptical={deit_tiny_ckpt}",
                   "--data", str(image_folder), "--n-examples", "6", "--attacks", "fgsm", "--eps", "1/255",
                   "--device", "cpu", "--out", str(tmp_path), "--quiet", timeout=300)
    assert proc.returncode == 0, proc.stderr
    df = pd.read_csv(tmp_path / "results.csv")
    assert list(df["attack"]) == ["clean", "fgsm", "any"] and (df["n"] == 6).all()
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["data"]["num_classes"] == 1000  # wnid folders map to the ImageNet-1k index
    assert run["batch_size"] == 16  # the CPU default for 224x224 folders (memory, at no cost in speed)


def test_random_weights_run_anywhere_and_every_table_says_so(tmp_path, image_folder):
    store = tmp_path / "s.sqlite"
    proc = run_cli("run", "-m", "deit-tiny-elliptical", "--weights", "random", "--data", str(image_folder), "-n", "3",
                   "--attacks", "fgsm", "--eps", "1/255", "--quiet", "--store", str(store), "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert "RANDOM WEIGHTS" in proc.stdout
    df = pd.read_csv(tmp_path / "o" / "results.csv")
    assert (df["checkpoint"] == "random weights (untrained)").all()
    assert "RANDOM WEIGHTS (untrained, a smoke test): deit-tiny-elliptical" in (tmp_path / "o" / "results.md").read_text()
    table = run_cli("table", "--store", str(store), "-f", "md")
    assert "RANDOM WEIGHTS" in table.stdout
    model = robeval.load_model("deit-tiny", pretrained=False)
    assert model.meta.weights == "random"


def test_user_errors_leave_no_failed_run_behind(tmp_path, image_folder):
    store = tmp_path / "s.sqlite"
    bad = tmp_path / "notes.pth"
    bad.write_text("hello this is text\n")
    for args in (["-m", "digits-deit", "--checkpoint", str(bad)], ["-m", "deit-tiny-elliptical", "--data", str(image_folder)],
                 ["-m", "digits-deit", "--data", str(tmp_path / "nowhere")]):
        proc = run_cli("run", *args, "-n", "3", "--attacks", "fgsm", "--quiet", "--store", str(store))
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert not store.exists() or Store(store).runs().empty


def test_table_and_plot_say_which_run_they_read(tmp_path):
    store = tmp_path / "s.sqlite"
    first = run_cli("run", "-m", "digits-deit", "-n", "10", "--attacks", "fgsm", "--quiet", "--store", str(store),
                    "--out", str(tmp_path / "o"))
    assert first.returncode == 0, first.stderr
    run_id = json.loads((tmp_path / "o" / "run.json").read_text())["run_id"]
    for command in (["table"], ["plot", "--out", str(tmp_path / "plots")], ["check"]):
        proc = run_cli(*command, "--store", str(store))
        assert proc.returncode == 0, proc.stderr
        assert f"Using the newest finished run {run_id}" in proc.stderr
    named = run_cli("table", run_id, "--store", str(store))
    assert "Using the newest" not in named.stderr


def test_terminal_caption_keeps_its_phrases_whole(tmp_path):
    proc = run_cli("run", "-m", "digits-deit", "-n", "10", "--attacks", "fgsm", "--quiet", "--store",
                   str(tmp_path / "s.sqlite"), "--out", str(tmp_path / "o"))
    lines = proc.stdout.splitlines()
    assert any("Linf eps = 8/255 (8/255, 0.0313725)" in line for line in lines)
    assert any(line.strip() == "data: digits, n = 10" for line in lines)


@pytest.mark.parametrize("args, shown", [
    (["--help"], "run"), (["run", "--help"], "--source-model"), (["models"], "deit-small-elliptical"),
    (["attacks"], "n_queries=5000"),
])
def test_help_and_listings_start_without_torch(args, shown):
    """The registrations are data: help and the listings read them in a process that never loads torch."""
    code = ("import sys; from robeval.cli import main\n"
            f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('torch', 'timm', 'pandas', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("[]") and shown in out


@pytest.mark.parametrize("args, message", [
    (["--out", "/proc/version/out"], "cannot create output folder"),
    (["--store", "/proc/version/s.sqlite"], "cannot create results store"),
    (["--attacks", "pgdd"], "did you mean pgd"),
])
def test_unwritable_paths_and_typos(args, message, tmp_path):
    base = ["run", "-n", "10", "--quiet"] + (["--store", str(tmp_path / "s.sqlite")] if "--store" not in args else [])
    proc = run_cli(*base, *args)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_a_model_whose_input_does_not_fit_the_data_names_the_way_forward(tmp_path):
    """The design card's second command on the embedded digits: one line naming --data's forms and the
    digits version of the same kind (issue 62)."""
    from .conftest import invoke, one_line_error

    said = invoke(["run", "--model", "deit-small", "--eps", "3/255", "-n", "8"], tmp_path)
    assert one_line_error(said, "expects input (3, 224, 224) but data 'digits' gives (1, 8, 8): give --data",
                          "ImageNet-style folder", "takes (1, 8, 8): digits-deit")  # fmt: skip
    assert not list(tmp_path.iterdir())  # refused before any file was written

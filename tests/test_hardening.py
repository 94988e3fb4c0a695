"""Bad input, hostile checkpoints, interrupted runs and the soundness checks."""

from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image

import robeval
from robeval.models import build_network
from robeval.evaluation.model_checks import model_checks
from robeval.results.flags import flags_from_model_checks, flags_from_summary
from robeval.results.store import Store

from .conftest import run_cli
from .test_store import units_done


@pytest.fixture()
def digits_folder(tmp_path):
    """A folder of 8x8-able images for the digits models, plus one non-image and one truncated JPEG."""
    rng = np.random.default_rng(0)
    root = tmp_path / "imgs"
    for name in ("a", "b", "c"):
        (root / name).mkdir(parents=True)
        for i in range(3):
            Image.fromarray(rng.integers(0, 255, (16, 16), dtype=np.uint8)).save(root / name / f"{i}.png")
    (root / "a" / "notes.JPEG").write_text("this is not an image")
    good = root / "b" / "big.jpg"
    Image.fromarray(rng.integers(0, 255, (64, 64, 3), dtype=np.uint8)).save(good, quality=95)
    data = good.read_bytes()
    (root / "c" / "cut.jpg").write_bytes(data[: len(data) // 3])
    good.unlink()
    (tmp_path / "classes.txt").write_text("a 0\nb 3\nc 7\n")  # three digit classes: say which, with --class-map
    return root


def test_unreadable_files_are_skipped_counted_and_named(digits_folder, tmp_path):
    proc = run_cli("run", "-m", "digits-deit", "--data", str(digits_folder), "--class-map", str(digits_folder.parent / "classes.txt"), "--attacks", "fgsm", "--quiet",
                   "--store", str(tmp_path / "s.sqlite"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert "Skipped 2 unreadable image file(s)" in proc.stdout and "notes.JPEG" in proc.stdout and "cut.jpg" in proc.stdout
    run = json.loads((tmp_path / "o" / "run.json").read_text())
    assert sorted(p.rsplit("/", 1)[-1] for p in run["skipped_files"]) == ["cut.jpg", "notes.JPEG"]
    df = pd.read_csv(tmp_path / "o" / "results.csv")
    assert (df["n"] == 9).all()


def test_strict_data_makes_them_an_error(digits_folder, tmp_path):
    proc = run_cli("run", "-m", "digits-deit", "--data", str(digits_folder), "--class-map", str(digits_folder.parent / "classes.txt"), "--attacks", "fgsm", "--quiet",
                   "--strict-data", "--store", str(tmp_path / "s.sqlite"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "unreadable image file" in proc.stderr and "Traceback" not in proc.stderr


def test_hostile_pickle_is_refused_from_the_cli(tmp_path):
    marker = tmp_path / "marker"

    class Payload:
        def __reduce__(self):
            import os
            return (os.system, (f"touch {marker}",))

    ckpt = tmp_path / "evil.pth"
    torch.save({"model": Payload()}, ckpt)
    proc = run_cli("run", "-m", "digits-deit", "--checkpoint", str(ckpt), "--quiet", "--store", str(tmp_path / "s.sqlite"))
    assert proc.returncode == 2 and "cannot be loaded safely" in proc.stderr and "--trust-checkpoint" in proc.stderr
    assert not marker.exists()


def test_trust_checkpoint_warns(tmp_path):
    ckpt = tmp_path / "plain.pth"
    torch.save({"model": build_network("digits-deit").state_dict(), "note": Store}, ckpt)  # a class: not plain data
    refused = run_cli("run", "-m", "digits-deit", "--checkpoint", str(ckpt), "-n", "10", "--attacks", "fgsm", "--quiet",
                      "--store", str(tmp_path / "s.sqlite"), "--out", str(tmp_path / "o"))
    assert refused.returncode == 2
    trusted = run_cli("run", "-m", "digits-deit", "--checkpoint", str(ckpt), "-n", "10", "--attacks", "fgsm", "--quiet",
                      "--trust-checkpoint", "--store", str(tmp_path / "s.sqlite"), "--out", str(tmp_path / "o"))
    assert trusted.returncode == 0 and "warning: --trust-checkpoint" in trusted.stderr


@pytest.mark.parametrize("args, message", [
    (["--out", "/proc/version/out"], "cannot create output folder"),
    (["--store", "/proc/version/s.sqlite"], "cannot create results store"),
    (["--attacks", "pgdd"], "did you mean pgd"),
])
def test_unwritable_paths_and_typos(args, message, tmp_path):
    base = ["run", "-n", "10", "--quiet"] + (["--store", str(tmp_path / "s.sqlite")] if "--store" not in args else [])
    proc = run_cli(*base, *args)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_empty_class_folders_are_a_user_error(tmp_path):
    (tmp_path / "data" / "n01440764").mkdir(parents=True)
    proc = run_cli("run", "-m", "digits-deit", "--data", str(tmp_path / "data"), "--quiet", "--store", str(tmp_path / "s.sqlite"))
    assert proc.returncode == 2 and "has no images" in proc.stderr


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_or_sigterm_keeps_work_and_prints_the_resume_command(tmp_path, signum, code):
    store = tmp_path / "s.sqlite"
    # SPSA at its defaults keeps each batch busy for about a second: the signal lands mid-run
    args = ["run", "-m", "digits-deit", "-n", "60", "--batch-size", "10", "--attacks", "fgsm,pgd,spsa",
            "--quiet", "--store", str(store), "--out", str(tmp_path / "o")]
    # a shell that starts jobs in the background (as CI may) leaves SIGINT ignored in its children:
    # restore the default so the child gets Ctrl-C as a terminal would deliver it
    proc = subprocess.Popen([sys.executable, "-m", "robeval", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 240
    while units_done(store) < 5 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    assert proc.poll() is None
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err
    kept = units_done(store)
    assert 5 <= kept < 24 and Store(store).runs()["status"].iloc[0] == "interrupted"
    command = re.search(r"resume with: (robeval .*)", err).group(1)
    resumed = run_cli(*shlex.split(command)[1:])
    assert resumed.returncode == 0, resumed.stderr
    assert units_done(store) == 24 and Store(store).runs()["status"].iloc[0] == "finished"


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
    flags = flags_from_model_checks("m", model_checks(wrap(model), x, y))
    assert [f.check for f in flags] == ([check] if check else [])
    for f in flags:
        assert f.message and f.advice


def test_summary_level_checks():
    rows = [("pgd", "2/255", 2 / 255, 60.0), ("pgd", "8/255", 8 / 255, 40.0), ("square", "2/255", 2 / 255, 70.0),
            ("square", "8/255", 8 / 255, 30.0), ("fgsm", "2/255", 2 / 255, 50.0), ("fgsm", "8/255", 8 / 255, 55.0)]
    summary = pd.DataFrame([{"model": "m", "attack": a, "eps": e, "eps_value": v, "top1": t} for a, e, v, t in rows])
    flags = flags_from_summary(summary)
    assert {f.check for f in flags} == {"gradient-masking", "eps-monotonicity"}
    masking = [f for f in flags if f.check == "gradient-masking"]
    assert len(masking) == 1 and "8/255" in masking[0].message
    rising = [f for f in flags if f.check == "eps-monotonicity"]
    assert len(rising) == 1 and "fgsm" in rising[0].message


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

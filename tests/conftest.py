"""Shared fixtures: tiny data, tiny checkpoints, and a CLI runner that reports exit code and output."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch

# Settings that keep the expensive attacks cheap in tests (the defaults are exercised by `make run`).
FAST_SETTINGS = {
    "apgd-ce": {"n_iter": 10}, "apgd-t": {"n_iter": 10, "n_target_classes": 3}, "fab-t": {"n_iter": 10, "n_target_classes": 3},
    "square": {"n_queries": 100}, "spsa": {"iterations": 5, "samples": 16},
    "apgd-dlr": {"n_iter": 10}, "fab": {"n_iter": 10}, "transfer-apgd-ce": {"n_iter": 10},
    "fmn": {"steps": 10}, "fab-mn": {"n_iter": 10},
}


@pytest.fixture(autouse=True)
def _threads():
    torch.set_num_threads(2)


# Commands run from a scratch folder, so default outputs (results/robeval.sqlite, results/<run id>)
# never land in the checkout.
SCRATCH = Path(tempfile.mkdtemp(prefix="robeval-tests-"))


def run_cli(*args: str, timeout: int = 600, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m robeval ARGS`` the way a user runs the command."""
    return subprocess.run([sys.executable, "-m", "robeval", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd or SCRATCH)


@pytest.fixture(scope="session")
def image_folder(tmp_path_factory) -> Path:
    """A tiny ImageNet-style folder: 3 wnid classes x 4 generated JPEGs of odd sizes."""
    from PIL import Image

    root = tmp_path_factory.mktemp("imagenet") / "val"
    rng = np.random.default_rng(0)
    for wnid in ("n01440764", "n01443537", "n01484850"):
        (root / wnid).mkdir(parents=True)
        for i in range(4):
            h, w = int(rng.integers(40, 90)), int(rng.integers(40, 90))
            Image.fromarray(rng.integers(0, 255, (h, w, 3), dtype=np.uint8)).save(root / wnid / f"img_{i}.JPEG")
    return root


@pytest.fixture(scope="session")
def deit_tiny_state() -> dict[str, torch.Tensor]:
    import timm

    torch.manual_seed(0)
    return timm.create_model("deit_tiny_patch16_224", pretrained=False).state_dict()


@pytest.fixture(scope="session")
def deit_tiny_ckpt(tmp_path_factory, deit_tiny_state) -> Path:
    path = tmp_path_factory.mktemp("ckpt") / "deit_tiny.pth"
    torch.save(deit_tiny_state, path)
    return path


class Invoked:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.returncode, self.stdout, self.stderr = code, out, err


@pytest.fixture()
def cli(capsys, monkeypatch, tmp_path):
    """Run ``robeval ARGS`` in this process (no torch import per call), from ``tmp_path``: exit code,
    stdout and stderr as :func:`run_cli` gives them."""
    import signal

    from robeval.cli import main

    monkeypatch.chdir(tmp_path)
    sigterm = signal.getsignal(signal.SIGTERM)

    def invoke(*args: str) -> Invoked:
        capsys.readouterr()
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            signal.signal(signal.SIGTERM, sigterm)
        out, err = capsys.readouterr()
        return Invoked(code, out, err)

    return invoke


def one_line_error(result: Invoked, *words: str) -> bool:
    """Exit code 2, one ``error:`` line naming ``words``, no traceback."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    return (result.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:")
            and all(w in lines[0] for w in words) and "Traceback" not in result.stderr)

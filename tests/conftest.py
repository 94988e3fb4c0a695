"""Shared fixtures: tiny data, tiny checkpoints, and a CLI runner that reports exit code and output."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch

# Settings that keep the expensive attacks cheap in tests (the defaults are exercised by `make run`).
FAST_SETTINGS = {
    "apgd-ce": {"n_iter": 10},
    "apgd-t": {"n_iter": 10, "n_target_classes": 3},
    "fab-t": {"n_iter": 10, "n_target_classes": 3},
    "square": {"n_queries": 100},
    "spsa": {"iterations": 5, "samples": 8},
    "apgd-dlr": {"n_iter": 10},
    "fab": {"n_iter": 10},
    "transfer-apgd-ce": {"n_iter": 10},
    "fmn": {"steps": 10},
    "fab-mn": {"n_iter": 10},
    "apgd-t-malt": {"n_iter": 10, "n_target_classes": 3},
    "apgd-t-rest": {"n_iter": 10, "n_target_classes": 3, "skip_malt_targets": 1},
}


# Under pytest-xdist (make test runs one worker per core) each worker computes on one thread.
THREADS = 1 if os.environ.get("PYTEST_XDIST_WORKER") else 2


@pytest.fixture(autouse=True)
def _threads():
    torch.set_num_threads(THREADS)


# Commands run from a scratch folder, so default outputs (results/robeval.sqlite, results/<run id>)
# never land in the checkout.
SCRATCH = Path(tempfile.mkdtemp(prefix="robeval-tests-"))


def run_cli(
    *args: str, timeout: int = 600, cwd: Path | None = None, process: bool = False
) -> subprocess.CompletedProcess:
    """Run ``robeval ARGS`` as a user does: in this process (no torch import per call), or with
    ``process=True`` in a process of its own (where that is the point: signals, import time)."""
    if process:
        return subprocess.run(
            [sys.executable, "-m", "robeval", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd or SCRATCH,
        )
    return invoke(list(args), cwd or SCRATCH)


def invoke(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``robeval.cli.main(args)`` from ``cwd`` with stdout and stderr captured; the working directory,
    the environment and the SIGTERM handler are restored afterwards."""
    import io
    import os
    import signal
    from contextlib import redirect_stderr, redirect_stdout

    from robeval.cli import main

    out, err = io.StringIO(), io.StringIO()
    before, env, sigterm = os.getcwd(), dict(os.environ), signal.getsignal(signal.SIGTERM)
    os.chdir(cwd)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                main(args)
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(before)
        os.environ.clear()
        os.environ.update(env)
        signal.signal(signal.SIGTERM, sigterm)
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


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


@pytest.fixture()
def cli(tmp_path):
    """``cli(*args)``: :func:`run_cli` in this process, from ``tmp_path``."""
    return lambda *args: invoke(list(args), tmp_path)


def require_tool(found: object, what: str, how: str) -> None:
    """For a test that needs something from outside robeval (Chromium, pdflatex, RobustBench's package):
    where ``found`` is falsy, under ``CI=true`` (where .ci/run installs it) the test fails, elsewhere it
    is skipped, saying what is missing and ``how`` to get it."""
    if found:
        return
    if os.environ.get("CI", "").strip().lower() == "true":
        pytest.fail(f"{what} is missing under CI=true ({how}): this test must run in CI", pytrace=False)
    pytest.skip(f"{what} is not installed here ({how})")


def typeset(tex: str, folder: Path) -> Path:
    """``tex`` (a LaTeX fragment) compiled by pdflatex in an article of its own in ``folder``; the PDF (the
    test fails with pdflatex's last words when it does not compile, and needs pdflatex: :func:`require_tool`)."""
    require_tool(shutil.which("pdflatex"), "pdflatex", "apt-get install texlive-latex-base; .ci/run installs it")
    doc = folder / "doc.tex"
    doc.write_text("\\documentclass{article}\n\\begin{document}\n" + tex + "\\end{document}\n")
    made = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name], cwd=folder,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert made.returncode == 0, made.stdout[-2000:]
    return folder / "doc.pdf"


def one_line_error(result: subprocess.CompletedProcess, *words: str) -> bool:
    """Exit code 2, one ``error:`` line naming ``words``, no traceback."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    return (
        result.returncode == 2
        and len(lines) == 1
        and lines[0].startswith("error:")
        and all(w in lines[0] for w in words)
        and "Traceback" not in result.stderr
    )


# The slowest modules, slowest first (a module's tests and fixtures together, measured on two workers:
# test_tutorial 97 s, test_registries 55, test_convergence 43, test_fast_protocol 31, then 11-21 s each)
SLOW_FIRST = ("test_tutorial.py", "test_registries.py", "test_convergence.py", "test_fast_protocol.py",
              "test_members.py", "test_store.py", "test_distributed.py", "test_failing_commands.py",
              "test_open_run.py", "test_hostile_errors.py", "test_html_report.py", "test_live_run.py",
              "test_table_recipes.py", "test_lookalike_names.py", "test_read_once.py", "test_checkpoint_contents.py",
              "test_compiled.py", "test_weight_gradients.py",
              "test_cascade.py", "test_interruptions.py", "test_layout.py", "test_rvt.py", "test_attacks.py",
              "test_hostile_text.py")  # fmt: skip


def slowness_rank(module: str) -> int:
    """``module``'s place in :data:`SLOW_FIRST` (a module not named there after all that are)."""
    name = module.rsplit("/", 1)[-1]
    return SLOW_FIRST.index(name) if name in SLOW_FIRST else len(SLOW_FIRST)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slowest modules first, slowest first: the order of a plain or ``-n`` run."""
    items.sort(key=lambda item: slowness_rank(item.path.name))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under ``--dist loadscope`` (make test's), the modules go out longest first: the slow ones in
    :data:`SLOW_FIRST`'s order, then the rest by their number of tests (loadscope's own order).  Its
    plain order, by number of tests alone, gave test_tutorial (few tests, the slowest) out last, and one
    worker ran it alone for its last ~20 s while the other had finished."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SlowModulesFirst(LoadScopeScheduling):
        def _assign_work_unit(self, node) -> None:
            order = sorted(self.workqueue.items(), key=lambda unit: (slowness_rank(unit[0]), -len(unit[1])))
            self.workqueue.clear()
            self.workqueue.update(order)
            super()._assign_work_unit(node)

    return SlowModulesFirst(config, log)

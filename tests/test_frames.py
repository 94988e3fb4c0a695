"""A reader follows ``robeval run`` to an attack's ``perturb`` in a handful of robeval's frames (issue 39:
at most 8 frames in at most 6 files; AutoAttack's ``run_standard_evaluation`` takes about 3)."""

from __future__ import annotations

import inspect
from pathlib import Path

import robeval
from robeval.attacks.gradient import FGSM

from .conftest import run_cli

PACKAGE = Path(robeval.__file__).resolve().parent


def test_the_run_command_reaches_an_attack_in_at_most_8_frames_in_6_files(monkeypatch, tmp_path):
    stacks: list[list[tuple[Path, int, str]]] = []

    def perturb(self, x, y):  # a trivial attack (its input back) that notes how it was called
        stacks.append([(Path(f.filename).resolve(), f.lineno, f.function) for f in inspect.stack()])
        return x

    monkeypatch.setattr(FGSM, "perturb", perturb)
    done = run_cli("run", "-m", "digits-deit", "-n", "4", "--attacks", "fgsm", "--quiet",
                   "--store", str(tmp_path / "s.sqlite"), "--out", str(tmp_path / "o"))
    assert done.returncode == 0, done.stderr
    ours = [f for f in reversed(stacks[0]) if PACKAGE in f[0].parents]  # outermost first
    start = next(i for i, (path, _, function) in enumerate(ours) if path == PACKAGE / "cli" / "run.py" and function == "run")
    frames = ours[start:]
    print("\n".join(f"{path.relative_to(PACKAGE.parent)}:{line} {function}" for path, line, function in frames))
    # a registered attack's perturb is one frame more, in its own file (robeval/attacks/gradient.py)
    assert len(frames) + 1 <= 8, frames
    assert len({path for path, _, _ in frames}) + 1 <= 6, frames

"""A failing command's stderr is its one ``error:`` line (docs/hardening.md): no empty line before it (rich's
progress bar, stopped where it never started, printed one), no traceback; and it leaves no file behind."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli

FAILING = {  # a failing call of each kind of command: what each says
    "train-demo diverges": (["train-demo", "-m", "digits-deit", "--out", "m.pth", "--lr", "1e9", "--epochs", "1"],
                            "training diverged"),
    "train-demo, a bad --lr": (["train-demo", "-m", "digits-deit", "--out", "m.pth", "--lr", "5_0e-4"], "--lr"),
    "profile, a batch too large": (["profile", "-m", "digits-deit", "--batch-size", str(10**20)], "its images alone"),
    "run, an unknown model": (["run", "-m", "no-such-model", "-n", "4", "--store", "s.sqlite", "-q"], "no-such-model"),
    "run, fast with other attacks": (["run", "--protocol", "fast", "--attacks", "pgd", "--store", "s.sqlite"], "fast"),
    "table, no store": (["table", "--store", "none.sqlite"], "none.sqlite"),
    "check, no store": (["check", "--store", "none.sqlite"], "none.sqlite"),
    "report, no store": (["report", "--store", "none.sqlite", "--out", "r.html"], "none.sqlite"),
}  # fmt: skip


@pytest.mark.parametrize("call", FAILING)
def test_a_failing_commands_stderr_is_its_one_error_line(call, tmp_path):
    args, words = FAILING[call]
    result = run_cli(*args, cwd=tmp_path)
    assert result.returncode == 2, (result.returncode, result.stderr[-500:])
    line, *rest = result.stderr.split("\n")
    assert line.startswith("error:") and words in line and rest == [""], result.stderr[-500:]
    assert not list(tmp_path.iterdir())  # nothing written

"""Ctrl-C and SIGTERM: the batch in flight is dropped, everything stored is kept, and the resume command is printed."""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
import sys
import time

import pytest

from robeval.results.store import Store

from .conftest import run_cli
from .test_store import units_done


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_or_sigterm_keeps_work_and_prints_the_resume_command(tmp_path, signum, code):
    store = tmp_path / "s.sqlite"
    # SPSA keeps each batch busy for about half a second: the signal lands mid-run
    args = ["run", "-m", "digits-deit", "-n", "40", "--batch-size", "10", "--attacks", "fgsm,pgd,spsa",
            "--set", "spsa.iterations=20", "--set", "spsa.samples=64", "--quiet", "--store", str(store), "--out", str(tmp_path / "o")]
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
    assert 5 <= kept < 16 and Store(store).runs()["status"].iloc[0] == "interrupted"
    command = re.search(r"resume with: (robeval .*)", err).group(1)
    if signum == signal.SIGTERM:  # the same command as after Ctrl-C: running it once (below) is enough
        assert command.startswith("robeval run ") and "--resume" in command
        return
    resumed = run_cli(*shlex.split(command)[1:])
    assert resumed.returncode == 0, resumed.stderr
    assert units_done(store) == 16 and Store(store).runs()["status"].iloc[0] == "finished"

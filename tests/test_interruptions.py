"""Ctrl-C and SIGTERM: the batch in flight is dropped, everything stored is kept, and the resume command is
printed.  The run holds at a known point until the signal (tests/stop_point.py): the test waits on that
state, so a loaded machine cannot finish the run first."""

from __future__ import annotations

import re
import shlex
import signal

import pytest

from robeval.store import Store

from .conftest import run_cli
from .stop_point import held_model, held_ranks, start_held, wait_until
from .test_store import units_done

UNITS = 4 * 3  # batches x (clean + 2 attacks)
HOLD_AFTER = 5  # units stored when the run holds: in the second batch


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_or_sigterm_keeps_work_and_prints_the_resume_command(tmp_path, signum, code):
    store = tmp_path / "s.sqlite"
    model = held_model(tmp_path)
    args = ["run", "-m", model, "-n", "40", "--batch-size", "10", "--attacks", "fgsm,pgd", "--set", "pgd.steps=5",
            "--quiet", "--store", str(store), "--out", str(tmp_path / "o")]  # fmt: skip
    # a shell that starts jobs in the background (as CI may) leaves SIGINT ignored in its children:
    # restore the default so the child gets Ctrl-C as a terminal would deliver it
    proc = start_held(args, model, store, HOLD_AFTER, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    wait_until(lambda: held_ranks(model, 1), proc)
    assert proc.poll() is None, proc.communicate()[1]
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == code, err
    kept = units_done(store)
    assert HOLD_AFTER <= kept < UNITS and Store(store).runs()["status"].iloc[0] == "interrupted"
    command = re.search(r"resume with: (robeval .*)", err).group(1)
    if signum == signal.SIGTERM:  # the same command as after Ctrl-C: running it once (below) is enough
        assert command.startswith("robeval run ") and "--resume" in command
        return
    resumed = run_cli(*shlex.split(command)[1:])
    assert resumed.returncode == 0, resumed.stderr
    assert units_done(store) == UNITS and Store(store).runs()["status"].iloc[0] == "finished"

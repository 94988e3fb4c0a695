"""Several workers through torchrun (gloo on CPU): SIGTERM stops them all, and the resumed run has one
worker's records.  (A killed run's zombie holder is taken over: tests/test_failing_commands.py.)  The
workers hold at a known point until the signal (tests/stop_point.py): the test waits on that state."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pandas as pd

from robeval.store import Store

from .conftest import run_cli
from .stop_point import held_model, held_ranks, start_held, wait_until
from .test_store import units_done

ARGS = ["run", "-n", "40", "--batch-size", "10", "--attacks", "fgsm,pgd", "--set", "pgd.steps=5", "--quiet"]


def records(path) -> pd.DataFrame:
    store = Store(path)
    return store.records(store.runs()["id"].iloc[-1]).sort_values(["model", "eps", "attack", "example"]).reset_index(drop=True)


def test_nproc_must_be_positive():
    proc = run_cli("run", "--nproc", "0", "--quiet")
    assert proc.returncode == 2 and "--nproc must be at least 1" in proc.stderr


def test_more_workers_than_the_machine_holds_are_refused(cli):
    from robeval.core.machine import cores

    result = cli("run", "--nproc", str(cores() + 1), "--quiet")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and f"this machine has {cores()} CPU cores" in lines[0]


def running(pattern: str) -> list[str]:
    """The processes whose command line holds ``pattern``, zombies (exited, not yet reaped) left out."""
    pids = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()
    return [p for p in pids if _state(p) not in ("Z", "")]


def _state(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:  # gone
        return ""


def test_sigterm_stops_every_worker_and_the_resumed_run_equals_one_worker(tmp_path):
    """Each worker holds at a known point (tests/stop_point.py) until the launcher forwards SIGTERM: the
    test waits on that state, so neither worker can finish first on a loaded machine."""
    model = held_model(tmp_path)
    args = [*ARGS, "-m", model]
    one = run_cli(*args, "--store", str(tmp_path / "one.sqlite"), "--out", str(tmp_path / "one"))
    assert one.returncode == 0, one.stderr
    path = tmp_path / "s.sqlite"
    proc = start_held([*args, "--nproc", "2", "--store", str(path), "--out", str(tmp_path / "o")], model, path, 2)
    wait_until(lambda: held_ranks(model, 2), proc)
    assert proc.poll() is None, proc.communicate()[1]
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 143 and "Traceback" not in err, err
    assert "resume with: robeval run" in err and "--resume" in err
    wait_until(lambda: not running(str(path)), hang_guard=120)  # one SIGKILLed after the grace may be dying still
    assert running(str(path)) == [], "workers outlived the command"
    assert Store(path).runs()["status"].iloc[0] == "interrupted"
    total = 1 * 4 * 3  # models x batches x (clean + 2 attacks)
    assert 0 < units_done(path) < total
    # resumed in one process (the workers' own files left behind): the units the two workers stored and
    # the rest are one worker's records and table
    resumed = run_cli(*args, "--store", str(path), "--resume", "--out", str(tmp_path / "o"))
    assert resumed.returncode == 0, resumed.stderr
    assert units_done(path) == total
    pd.testing.assert_frame_equal(records(path), records(tmp_path / "one.sqlite"))
    a = pd.read_csv(tmp_path / "one" / "results.csv")
    b = pd.read_csv(tmp_path / "o" / "results.csv")
    pd.testing.assert_frame_equal(a.drop(columns=["run_id"]), b.drop(columns=["run_id"]))

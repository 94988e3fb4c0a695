"""Several workers through torchrun (gloo on CPU): SIGTERM stops them all, and the resumed run has one
worker's records.  (A killed run's zombie holder is taken over: tests/test_failing_commands.py.)"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pandas as pd

from robeval.results.store import Store

from .conftest import run_cli
from .test_store import units_done

ARGS = ["run", "-n", "20", "--batch-size", "10", "--attacks", "fgsm,pgd,spsa", "--set", "spsa.iterations=20",
        "--set", "spsa.samples=16", "--quiet"]


def records(path) -> pd.DataFrame:
    store = Store(path)
    return store.records(store.runs()["id"].iloc[-1]).sort_values(["model", "eps", "attack", "example"]).reset_index(drop=True)


def test_nproc_must_be_positive():
    proc = run_cli("run", "--nproc", "0", "--quiet")
    assert proc.returncode == 2 and "--nproc must be at least 1" in proc.stderr


def test_more_workers_than_the_machine_holds_are_refused(cli):
    from robeval.machine import cores

    result = cli("run", "--nproc", str(cores() + 1), "--quiet")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and f"this machine has {cores()} CPU cores" in lines[0]


def test_sigterm_stops_every_worker_and_the_resumed_run_equals_one_worker(tmp_path):
    one = run_cli(*ARGS, "--store", str(tmp_path / "one.sqlite"), "--out", str(tmp_path / "one"))
    assert one.returncode == 0, one.stderr
    path = tmp_path / "s.sqlite"
    args = [*ARGS, "--nproc", "2", "--store", str(path), "--out", str(tmp_path / "o")]
    proc = subprocess.Popen([sys.executable, "-m", "robeval", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.time() + 240
    while units_done(path) < 4 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.1)
    assert proc.poll() is None, "finished before it could be stopped"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143 and "Traceback" not in err, err
    assert "resume with: robeval run" in err and "--resume" in err
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-f", str(path)], capture_output=True, text=True).stdout.split()
    assert left == [], "workers outlived the command"
    assert Store(path).runs()["status"].iloc[0] == "interrupted"
    total = 2 * 2 * 4  # models x batches x (clean + 3 attacks)
    assert 0 < units_done(path) < total
    # resumed in one process (the workers' own files left behind): the units the two workers stored and
    # the rest are one worker's records and table
    resumed = run_cli(*ARGS, "--store", str(path), "--resume", "--out", str(tmp_path / "o"))
    assert resumed.returncode == 0, resumed.stderr
    assert units_done(path) == total
    pd.testing.assert_frame_equal(records(path), records(tmp_path / "one.sqlite"))
    a = pd.read_csv(tmp_path / "one" / "results.csv")
    b = pd.read_csv(tmp_path / "o" / "results.csv")
    pd.testing.assert_frame_equal(a.drop(columns=["run_id"]), b.drop(columns=["run_id"]))

"""Commands that fail say so in one line and change no file they did not create: output paths,
another run's folder, a foreign database as the store, a full disk, two processes on one run."""

from __future__ import annotations

import gc
import hashlib
import json
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from robeval.api import evaluate_full
from robeval.store import Store

from .conftest import one_line_error
from .test_shifts import StopAfter
from .test_store import units_done


def digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with the SHA-256 of its bytes."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture()
def place(tmp_path, place_made_once):
    """A folder holding a robeval store with one finished run (and its files) and another program's
    database: a copy of one made once, so that each command fails on a place of its own."""
    shutil.copytree(place_made_once, tmp_path, dirs_exist_ok=True)
    return tmp_path


@pytest.fixture(scope="module")
def place_made_once(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("place")
    store = tmp_path / "s.sqlite"
    evaluate_full(n_examples=10, attacks="fgsm", store=str(store), out=tmp_path / "run")
    gc.collect()  # the run's connection closes: the store's pages are all in the file itself
    with sqlite3.connect(store) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn = sqlite3.connect(tmp_path / "other.db")
    conn.execute("CREATE TABLE notes (id INTEGER, text TEXT)")
    conn.execute("INSERT INTO notes VALUES (1, 'mine')")
    conn.commit()
    conn.close()
    (tmp_path / "table.csv").write_text("a,b\n1,2\n")
    (tmp_path / "results.csv").write_text("model,top1\nmine,99\n")  # another program's results in the folder
    return tmp_path


FAILING = [
    (["run", "-n", "10", "--attacks", "fgsm", "--store", "other.db"], ["another program"]),
    (["runs", "--store", "other.db"], ["another program"]),
    (["table", "--store", "other.db"], ["another program"]),
    (["run", "-n", "10", "--store", "table.csv"], ["not a robeval results store"]),
    (["run", "-n", "10", "--attacks", "fgsm", "--store", "s.sqlite", "--out", "run"], ["holds the files of run"]),
    (["run", "-n", "10", "--attacks", "fgsm", "--store", "s.sqlite", "--out", "."], ["holds results.csv but no run.json"]),
    (["table", "--store", "s.sqlite", "--out", "run"], ["is a folder"]),
    (["check", "--store", "s.sqlite", "--report", "run"], ["is a folder"]),
    (["table", "--store", "s.sqlite", "--out", "/proc/robeval-table.md"], ["output folder /proc is not writable"]),
    (["run", "-n", "10", "--eps", "9/2x", "--store", "s.sqlite"], ["invalid eps"]),
    (["run", "-n", "10", "--set", "pgd.steps=0", "--store", "s.sqlite"], ["pgd.steps"]),
    (["reproduce", "elliptical-table-e", "-n", "4", "--store", "s.sqlite", "--out", "/proc/version/x"],
     ["cannot create output folder /proc/version/x"]),
]


@pytest.mark.parametrize("args, words", FAILING, ids=[" ".join(a) for a, _ in FAILING])
def test_a_failing_command_leaves_every_file_as_it_was(cli, place, args, words):
    before = {k: v for k, v in digest(place).items() if not k.endswith(("-wal", "-shm"))}
    result = cli(*args, "--quiet") if args[0] in ("run", "reproduce") else cli(*args)
    assert one_line_error(result, *words), result.stderr
    assert {k: v for k, v in digest(place).items() if not k.endswith(("-wal", "-shm"))} == before


def test_a_missing_report_folder_is_made(cli, place):
    result = cli("check", "--store", "s.sqlite", "--report", "new/folder/report.md")
    assert result.returncode == 0 and (place / "new" / "folder" / "report.md").exists()


def test_a_full_store_stops_the_run_resumable(cli, tmp_path, monkeypatch):
    original = Store.__init__
    reference = evaluate_full(n_examples=30, batch_size=10, attacks="fgsm,pgd")

    def small_disk(self, path):
        original(self, path)
        pages = self.conn.execute("PRAGMA page_count").fetchone()[0]
        self.conn.execute(f"PRAGMA max_page_count = {pages + 2}")  # SQLite's own 'database or disk is full'

    monkeypatch.setattr(Store, "__init__", small_disk)
    store = tmp_path / "s.sqlite"
    args = ["run", "-n", "30", "--batch-size", "10", "--attacks", "fgsm,pgd", "--quiet", "--store", str(store)]
    full = cli(*args)
    assert one_line_error(full, f"cannot write to results store {store}", "is interrupted", "resume with: robeval run")
    monkeypatch.setattr(Store, "__init__", original)
    run_id = Store(store).runs()["id"].iloc[0]
    assert Store(store).runs()["status"].iloc[0] in ("interrupted", "running")
    resumed = cli(*args, "--resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    got = Store(store).records(run_id).drop(columns=["batch"])
    pd.testing.assert_frame_equal(got.reset_index(drop=True), reference.records.drop(columns=["run_id", "batch"]).reset_index(drop=True),
                                  check_dtype=False)


def test_one_process_holds_a_run_at_a_time(cli, tmp_path):
    """The first process holds still while it holds the run (tests/stop_point.py), so the second meets
    it there however loaded the machine is; released, it finishes the run."""
    from .stop_point import held_model, held_ranks, release, start_held, wait_until

    store, model = tmp_path / "s.sqlite", held_model(tmp_path)
    args = ["run", "-m", model, "-n", "40", "--batch-size", "10", "--attacks", "fgsm,spsa", "--quiet",
            "--set", "spsa.iterations=20", "--set", "spsa.samples=16", "--store", str(store), "--out", str(tmp_path / "o")]
    options = dict(models=model, n_examples=40, batch_size=10, attacks="fgsm,spsa", settings={"spsa": {"iterations": 20, "samples": 16}})
    with pytest.raises(KeyboardInterrupt):
        evaluate_full(store=str(store), reporter=StopAfter(1), **options)
    run_id = Store(store).runs()["id"].iloc[0]
    first = start_held([*args, "--resume", run_id], model, store, units_done(store) + 1, cwd=tmp_path)
    wait_until(lambda: held_ranks(model, 1), first)
    second = cli(*args, "--resume", run_id)
    assert one_line_error(second, f"run {run_id} is being evaluated by process {first.pid}"), second.stderr
    release(model)
    _, err = first.communicate(timeout=600)
    assert first.returncode == 0, err
    reference = evaluate_full(**options).records.drop(columns="run_id")
    got = Store(store).records(run_id)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), reference.reset_index(drop=True), check_dtype=False)


def exited_process(reaped: bool) -> tuple[subprocess.Popen, str]:
    """A process that has exited, reaped by its parent or left a zombie (as a killed run's workers stay
    in a container whose first process reaps nothing), and when it started."""
    from robeval.core.machine import process_start

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1)"])
    start = process_start(proc.pid)
    if reaped:
        proc.wait()
    else:
        while Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            time.sleep(0.05)
    return proc, str(start)


@pytest.mark.parametrize("reaped", [True, False], ids=["reaped", "zombie"])
def test_a_holder_that_is_gone_is_taken_over(tmp_path, reaped):
    store = Store(tmp_path / "s.sqlite")
    options = dict(models="digits-deit", n_examples=20, batch_size=10, attacks="fgsm")
    with pytest.raises(KeyboardInterrupt):
        evaluate_full(store=store, reporter=StopAfter(1), **options)
    run_id = store.runs()["id"].iloc[0]
    dead, start = exited_process(reaped)
    fake = {"host": socket.gethostname(), "pid": dead.pid, "start": start, "beat": "2026-01-01T00:00:00+00:00"}
    store.update_run(run_id, holder=json.dumps(fake), status="running")  # as a SIGKILLed run leaves it
    assert "process is gone" in Store.shown_status("running", json.dumps(fake))
    res = evaluate_full(store=store, resume=run_id, **options)
    dead.wait()
    assert res.info["status"] == "finished" and store.runs()["holder"].iloc[0] is None


def test_ctrl_c_during_reproduce_names_the_resume_command(cli, tmp_path, monkeypatch):
    from robeval.report import terminal

    class Interrupting(StopAfter):
        def __init__(self) -> None:
            super().__init__(1)

    monkeypatch.setattr(terminal, "RichReporter", Interrupting)
    result = cli("reproduce", "elliptical-robust-baselines", "-n", "4", "--store", str(tmp_path / "s.sqlite"))
    assert result.returncode == 130 and "Traceback" not in result.stderr
    assert "resume with: robeval reproduce elliptical-robust-baselines -n 4" in result.stderr and "--resume" in result.stderr
    assert Store(tmp_path / "s.sqlite").runs()["status"].iloc[0] == "interrupted"

"""Read commands work beside a live run: on a store that holds a finished, a failed and an interrupted
run, every read command (`runs`, `table`, `compare`, `check`, `plot`, `report`, `examples`) answers while a real
`robeval run` in another process evaluates a fourth run of the same store.  A finished run has no holder,
which pandas reads back as a float NaN beside the live run's holder: a missing value is never taken for
text.  The live run holds at a known point (tests/stop_point.py) and the test waits on that state, never
on time, so a loaded machine cannot finish it before it is read."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from robeval.api import evaluate_full
from robeval.attacks import autoattack
from robeval.store import Store, stored_holder

from .conftest import invoke
from .stop_point import held_model, held_ranks, start_held, wait_until
from .test_shifts import StopAfter
from .test_store import units_done

HANG_GUARD = 240.0  # seconds: only ends a hang (the test then fails on the state), it measures nothing


def _boom(self, x, y):
    raise IndexError("index 10 is out of bounds for dimension 1 with size 10")


def stored_runs(store: Path) -> dict[str, str]:
    """Each status of ``store``'s runs -> the id of its run (one run per status here)."""
    with closing(Store(store, read_only=True)) as db:
        runs = db.runs()
    return dict(zip(runs["status"], runs["id"]))


def settled_runs(store: Path) -> None:
    """A failed run (its attack apgd-t raised, fgsm's units stored), an interrupted one (stopped after two
    units) and a finished one of two models, each of ten or twenty digits."""
    tiny = {"batch_size": 10, "store": str(store), "progress": False}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(autoattack.APGDT, "perturb", _boom)
        evaluate_full(models="digits-deit", n_examples=10, attacks="fgsm,apgd-t", **tiny)
    with pytest.raises(KeyboardInterrupt):
        evaluate_full(models="digits-deit", n_examples=20, attacks="fgsm", reporter=StopAfter(2), **tiny)
    evaluate_full(models=["digits-deit", "digits-deit-elliptical"], n_examples=10, attacks="fgsm", **tiny)


def copy_runs(source: Path, store: Path) -> None:
    """Every run of the store ``source`` (its rows in every table) copied into ``store``, in one transaction."""
    with closing(sqlite3.connect(store, timeout=60)) as conn:
        conn.execute("ATTACH DATABASE ? AS source", (str(source),))
        tables = [t for (t,) in conn.execute("SELECT name FROM source.sqlite_master WHERE type = 'table'")]
        with conn:  # runs first: the other tables refer to them
            for table in sorted(tables, key=lambda t: t != "runs"):
                conn.execute(f"INSERT INTO main.{table} SELECT * FROM source.{table}")


@pytest.fixture(scope="module")
def live(tmp_path_factory) -> Iterator[tuple[Path, dict[str, str], subprocess.Popen]]:
    """``(folder, status -> run id, the live run's process)``: the store ``s.sqlite`` in ``folder`` holds a
    run that a `robeval run` of its own process is evaluating, held after its first unit, and the settled
    runs, made meanwhile in this process (in a store of their own: the live run holds once its store has
    a unit) and copied in once it holds; the process is ended (SIGTERM: the run stays resumable) when the
    module's tests are done."""
    folder = tmp_path_factory.mktemp("live")
    store, model = folder / "s.sqlite", held_model(folder)
    args = ["run", "-m", model, "-n", "20", "--batch-size", "10", "--attacks", "fgsm", "--quiet",
            "--store", str(store), "--out", str(folder / "live-out")]  # fmt: skip
    proc = start_held(args, model, store, 1)  # its first unit stored, then it holds
    try:
        settled_runs(folder / "settled.sqlite")
        wait_until(lambda: held_ranks(model, 1), proc, hang_guard=HANG_GUARD)
        assert held_ranks(model, 1) and proc.poll() is None, proc.communicate(timeout=60)[1][-2000:]
        copy_runs(folder / "settled.sqlite", store)
        yield folder, stored_runs(store), proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def test_runs_lists_the_live_run_as_running_beside_the_others(live):
    folder, ids, proc = live
    assert set(ids) == {"failed", "interrupted", "finished", "running"}
    listed = invoke(["runs", "--store", "s.sqlite"], folder)
    assert listed.returncode == 0 and not listed.stderr.strip(), listed.stderr
    rows = {line.split("│")[1].strip(): line for line in listed.stdout.splitlines() if line.count("│") > 2}
    assert set(ids.values()) <= set(rows), listed.stdout
    for status, run_id in ids.items():
        assert f"│ {status} " in rows[run_id], rows[run_id]  # the live run's process is alive: no "gone"
    assert "gone" not in listed.stdout and re.search(r"│ [123]/4 ", rows[ids["running"]])  # part of its units
    assert proc.poll() is None


READERS = [
    ["table"], ["table", "-f", "csv"], ["compare", "digits-deit", "digits-deit-elliptical"], ["check"],
    ["check", "--report", "checklist.md"], ["plot", "--out", "plots"],
    ["report", "--out", "report.html", "--gallery-size", "0"],  # (its gallery crafts as examples does)
    ["examples", "{finished}", "-a", "fgsm", "--max", "2", "--out", "examples.png"],
]  # fmt: skip


@pytest.mark.parametrize("args", READERS, ids=" ".join)
def test_every_read_command_answers_on_the_finished_run_beside_a_live_one(live, args):
    folder, ids, proc = live
    result = invoke([*(a.format_map(ids) for a in args), "--store", "s.sqlite"], folder)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "error:" not in result.stderr
    assert ids["finished"] in result.stdout + result.stderr  # the run it read, said
    assert proc.poll() is None  # the reader left the writer alone


@pytest.mark.parametrize("status", ["running", "interrupted", "failed"])
def test_a_run_not_finished_is_read_with_its_status_said(live, status):
    folder, ids, proc = live
    result = invoke(["table", ids[status], "-f", "json", "--store", "s.sqlite"], folder)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-2000:]
    warned = [line for line in result.stderr.splitlines() if line.startswith(f"warning: run {ids[status]} ")]
    assert len(warned) == 1 and status in warned[0], result.stderr  # the warning names it
    assert {row["run_status"] for row in json.loads(result.stdout)} == {status}
    assert proc.poll() is None


@pytest.mark.parametrize("args", [["check"], ["plot", "--out", "live-plots"], ["report", "--out", "live.html"]],
                         ids=" ".join)  # fmt: skip
def test_the_live_run_itself_is_read_with_the_units_it_stored(live, args):
    folder, ids, proc = live
    result = invoke([args[0], ids["running"], *args[1:], "--store", "s.sqlite"], folder)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert f"warning: run {ids['running']} is still running" in result.stderr
    assert proc.poll() is None


@pytest.mark.parametrize(
    "holder",
    [None, float("nan"), "", '{"host": "h"}', '{"host": "h", "pid": "1"}', '{"host": "h", "pid": -1}',
     '{"host": "h", "pid": true}', '{"host": 5, "pid": 1}', '{"host": "h", "pid": 1, "beat": 5}',
     '{"host": "h", "pid": 1, "beat": "yesterday"}', '{"host": "h", "pid": 1, "beat": "2026-01-01T00:00:00"}',
     '[1, 2]', "null"],
)  # fmt: skip
def test_a_holder_that_is_missing_or_no_robeval_wrote_is_none(holder):
    """A NULL holder read through pandas (NaN) is no text; a holder of other types or no time is no holder."""
    assert stored_holder(holder) is None
    assert Store.shown_status("finished", holder) == "finished"
    assert Store.shown_status("running", holder).startswith("running? (its process is gone")


def test_the_live_run_is_left_resumable(live):
    """Ended after its readers, the live run is interrupted with every unit it stored kept."""
    folder, ids, proc = live
    stored = units_done(folder / "s.sqlite")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err[-2000:]
    assert stored_runs(folder / "s.sqlite")["interrupted"] == ids["running"]  # the newest of the two now
    assert units_done(folder / "s.sqlite") >= stored and "resume with: robeval run" in err

"""Reference runs of the engine on the digits demo, each covering one of its paths, and a bitwise
comparison of their records and convergence curves with a snapshot made by earlier code.

Not a test file: a change that restructures the engine (issue 39) takes a snapshot with the code before
it, then compares after it, on the same machine with the same threads:

    PYTHONPATH=. python -m tests.reference_runs snapshot FOLDER   # with the code before the change
    PYTHONPATH=. python -m tests.reference_runs compare FOLDER    # with the code after it

Every run writes to a store of its own and is read back from it (per-example records, stored curve
points), so the comparison holds whatever the API returns.  ``in-memory`` reads the records a run kept
without a store.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from .conftest import FAST_SETTINGS

THREADS = 2
SUITE8 = "fgsm,pgd,spsa,apgd-ce,apgd-t,fab-t,square,fmn"
AA = "apgd-ce,apgd-t,fab-t,square"
BOTH = ["digits-deit", "digits-deit-elliptical"]


class StopAfter:
    """A reporter that interrupts the run after ``n`` finished units (as Ctrl-C would)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def start(self, *args: Any) -> None:
        pass

    def advance(self, *args: Any, **kwargs: Any) -> None:
        self.n -= 1
        if self.n == 0:
            raise KeyboardInterrupt

    def partial(self, *args: Any) -> None:
        pass

    def note(self, text: str) -> None:
        pass

    def stop(self) -> None:
        pass


def _evaluate(**options: Any) -> Any:
    from robeval.api import evaluate_full

    return evaluate_full(**options)


def _stored(path: Path) -> dict[str, pd.DataFrame]:
    """The newest run of the store at ``path``: its records and curve points, in the store's order."""
    from robeval.store import Store

    store = Store(path)
    try:
        run_id = store.runs()["id"].iloc[-1]
        return {"records": store.records(run_id), "curves": store.curves(run_id)}
    finally:
        store.close()


def _stored_run(folder: Path, **options: Any) -> dict[str, pd.DataFrame]:
    path = folder / "s.sqlite"
    _evaluate(store=str(path), **options)
    return _stored(path)


def _resumed(folder: Path, stop_after: int, **options: Any) -> dict[str, pd.DataFrame]:
    """Interrupted after ``stop_after`` units, then resumed in the same store."""
    from robeval.store import Store

    path = folder / "s.sqlite"
    try:
        _evaluate(store=str(path), reporter=StopAfter(stop_after), **options)
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("the run was not interrupted")
    store = Store(path)
    run_id = store.runs()["id"].iloc[-1]
    store.close()
    _evaluate(store=str(path), resume=run_id, **options)
    return _stored(path)


def _in_memory(folder: Path, **options: Any) -> dict[str, pd.DataFrame]:
    records = _evaluate(**options).records
    records = records.drop(columns=[c for c in ("run_id",) if c in records.columns])
    return {"records": records.reset_index(drop=True)}


def _two_workers(folder: Path) -> dict[str, pd.DataFrame]:
    """``robeval run --nproc 2`` (torchrun, gloo on CPU)."""
    path = folder / "s.sqlite"
    args = ["run", "-n", "20", "--batch-size", "10", "--attacks", "fgsm,pgd,spsa", "--set", "spsa.iterations=3",
            "--set", "spsa.samples=4", "--set", "pgd.steps=5", "--threads", "1", "--quiet", "--nproc", "2", "--store", str(path),
            "--out", str(folder / "o")]
    done = subprocess.run([sys.executable, "-m", "robeval", *args], capture_output=True, text=True, cwd=folder)
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    return _stored(path)


COMMON = dict(n_examples=20, settings=FAST_SETTINGS, seed=3, threads=THREADS)  # fixed threads: no governor

RUNS: dict[str, Callable[[Path], dict[str, pd.DataFrame]]] = {
    "suite8": lambda f: _stored_run(f, models=BOTH, eps="4/255,8/255", attacks=SUITE8, **COMMON),
    "in-memory": lambda f: _in_memory(f, models=BOTH, eps="4/255,8/255", attacks=SUITE8, **COMMON),
    "plus-l2": lambda f: _stored_run(f, models="digits-deit", norm="L2", eps="0.5", attacks="apgd-dlr,fab,fab-mn",
                                     **COMMON),
    "cascade": lambda f: _stored_run(f, models=BOTH, eps="8/255", attacks=AA, cascade=True, batch_size=10, **COMMON),
    "nielsen2024": lambda f: _stored_run(f, models=BOTH, protocol="nielsen2024", attacks="fgsm,pgd,spsa,apgd-ce",
                                         **COMMON),
    "bf16": lambda f: _stored_run(f, models="digits-deit", eps="8/255", attacks="fgsm,pgd,apgd-ce,square",
                                  precision="bf16", **COMMON),
    "shift": lambda f: _stored_run(f, models="digits-deit", shift="corruptions", corruptions="gaussian_noise,fog",
                                   severities="2,5", attacks="fgsm", batch_size=10, **COMMON),
    "transfer": lambda f: _stored_run(f, models=["digits-deit-elliptical", "digits-rvt"], source_model="digits-deit",
                                      attacks="pgd,transfer-pgd,transfer-apgd-ce", batch_size=10, **COMMON),
    "resumed": lambda f: _resumed(f, 5, models=BOTH, attacks="fgsm,pgd,square", batch_size=10, **COMMON),
    "cascade-resumed": lambda f: _resumed(f, 3, models="digits-deit", attacks=AA, cascade=True, batch_size=10,
                                          **COMMON),
    "two-workers": _two_workers,
    "fast": lambda f: _stored_run(f, models=BOTH, protocol="fast", eps="8/255", n_examples=20, seed=3,
                                  threads=THREADS),
}


def run_all(names: list[str] | None = None) -> dict[str, dict[str, pd.DataFrame]]:
    torch.set_num_threads(THREADS)
    out = {}
    for name in names or list(RUNS):
        with tempfile.TemporaryDirectory(prefix=f"robeval-ref-{name}-") as folder:
            out[name] = RUNS[name](Path(folder))
    return out


def snapshot(folder: Path, names: list[str] | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, frames in run_all(names).items():
        with open(folder / f"{name}.pkl", "wb") as fh:
            pickle.dump(frames, fh)
        print(name, {k: len(v) for k, v in frames.items()}, flush=True)


def bitwise_equal(a: pd.DataFrame, b: pd.DataFrame) -> str | None:
    """None when ``a`` and ``b`` hold the same columns, dtypes and values bit for bit (NaN where NaN)."""
    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return f"shape or columns differ: {list(a.columns)} x {len(a)} vs {list(b.columns)} x {len(b)}"
    for column in a.columns:
        x, y = a[column].reset_index(drop=True), b[column].reset_index(drop=True)
        if x.dtype != y.dtype:
            return f"{column}: dtype {x.dtype} vs {y.dtype}"
        if x.dtype.kind == "f":
            same = (x.to_numpy().view("u8") == y.to_numpy().view("u8")) | (x.isna() & y.isna()).to_numpy()
        else:
            same = (x == y).to_numpy()
        if not same.all():
            return f"{column}: {int((~same).sum())} rows differ"
    return None


# Columns added after a snapshot, with the value every record of a model of one checkpoint has: a
# snapshot made before they existed is compared on its own columns, the new ones checked to hold it.
LATER_COLUMNS = {"member": 0}


def without_later_columns(reference: pd.DataFrame, frame: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """``frame`` without the :data:`LATER_COLUMNS` that ``reference`` lacks (a problem when one holds
    another value than a model of one checkpoint gives)."""
    later = [c for c in LATER_COLUMNS if c in frame.columns and c not in reference.columns]
    for column in later:
        if not (frame[column] == LATER_COLUMNS[column]).all():
            return frame, f"{column}: not {LATER_COLUMNS[column]} everywhere"
    return frame.drop(columns=later), None


def compare(folder: Path, names: list[str] | None = None) -> bool:
    ok = True
    for name in names or list(RUNS):
        frames = run_all([name])[name]
        with open(folder / f"{name}.pkl", "rb") as fh:
            reference = pickle.load(fh)
        for part, frame in reference.items():
            new, problem = without_later_columns(frame, frames[part])
            problem = problem or bitwise_equal(frame, new)
            ok &= problem is None
            print(f"{name} {part} ({len(frame)} rows): {'bitwise equal' if problem is None else problem}", flush=True)
    return ok


if __name__ == "__main__":
    command, where, *chosen = sys.argv[1:]
    if command == "snapshot":
        snapshot(Path(where), chosen or None)
    else:
        sys.exit(0 if compare(Path(where), chosen or None) else 1)

"""A run that holds still at a known point until it is signalled, for the tests that stop a run: they wait
on a state (a file this model writes once the run's store holds enough units), never on time, so a
loaded machine cannot finish the run before the signal lands ("finished before it could be stopped").

The model is digits-deit as a model of the user's own code (``--model PATH.py:build``).  In a process
whose environment names a store (``STOP_STORE``) it waits, in its first forward pass after its rank's
store file holds ``STOP_AFTER`` units, until a signal ends it or the test writes ``PATH.py.release``
(:func:`release`), having written ``PATH.py.stopped-rank<R>``; once that file exists (a resumed run, a
run of another store) it is digits-deit and nothing else.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

MODEL = '''
import os
import sqlite3
import time
from pathlib import Path

import torch

import robeval


def units_stored(path):
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30) as conn:
            return conn.execute("SELECT COUNT(*) FROM units").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def hold_if_due():
    """Wait here for a signal or the release file, once, when this rank's store file holds enough units."""
    store, rank = os.environ.get("STOP_STORE"), int(os.environ.get("RANK", "0"))
    mark = Path(f"{__file__}.stopped-rank{rank}")
    if not store or mark.exists():
        return
    own = store if rank == 0 else f"{store}.rank{rank}"  # a worker's units, until rank 0 merges them
    if units_stored(own) >= int(os.environ["STOP_AFTER"]):
        mark.touch()
        while not Path(f"{__file__}.release").exists():  # a signal's handler raises out of here
            time.sleep(0.05)


class HeldDigits(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = robeval.load_model("digits-deit")  # takes [0,1] pixels, normalises inside

    def forward(self, x):
        hold_if_due()
        return self.net(x)


def build():
    return HeldDigits(), robeval.ModelConfig(input_size=(1, 8, 8), num_classes=10)
'''


def held_model(folder: Path) -> str:
    """The model's file in ``folder``, as ``--model`` names it."""
    path = folder / "held_digits.py"
    path.write_text(MODEL)
    return f"{path}:build"


def start_held(args: list[str], model: str, store: Path, after: int, **popen) -> subprocess.Popen:
    """``robeval ARGS`` in a process of its own whose ``model`` holds once ``store`` has ``after`` units
    (per rank)."""
    env = {**os.environ, "STOP_STORE": str(store), "STOP_AFTER": str(after)}
    return subprocess.Popen([sys.executable, "-m", "robeval", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **popen)  # fmt: skip


def wait_until(reached, proc: subprocess.Popen | None = None, hang_guard: float = 900.0) -> None:
    """Poll until ``reached()`` or ``proc`` has exited (its output then says why); the guard only ends a
    hang (the test then fails on the state), it measures nothing."""
    guard = time.monotonic() + hang_guard
    while not reached() and (proc is None or proc.poll() is None) and time.monotonic() < guard:
        time.sleep(0.05)


def release(model: str) -> None:
    """Let a held run go on."""
    Path(f"{model.rpartition(':')[0]}.release").touch()


def held_ranks(model: str, ranks: int) -> bool:
    """Whether every rank of the run holds (its mark written)."""
    path = model.rpartition(":")[0]
    return all(Path(f"{path}.stopped-rank{r}").exists() for r in range(ranks))

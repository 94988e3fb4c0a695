"""``robeval run --nproc N``: start N local workers through torchrun and stay in charge of them.

The launcher refuses more workers than the machine holds (a core, or a GPU, and about a gigabyte of
memory each), starts torchrun in a session of its own, and on Ctrl-C or SIGTERM stops every worker
itself: it forwards SIGTERM to the workers (each stores what it finished and exits quietly), kills
what is still running after a grace period, marks the run interrupted in the store when rank 0 could
not, and prints the command that resumes it.  torchrun's own agent never sees the signal, so it
prints no traceback of its own.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..core.errors import UserError
from ..core.machine import child_pids, cores, memory_available
from ..evaluation.distributed import LAUNCH_STATE

WORKER_MEMORY_BYTES = 1.2 * 2**30  # torch's runtime alone is 0.7-1.2 GB per process (benchmarks/memory.py)
STOP_GRACE_SECONDS = 20.0  # after the signal, workers that have not stopped by then are killed


def check_nproc(nproc: int, device: str) -> None:
    """One line when the machine cannot hold ``nproc`` workers (each needs a core or a GPU, and memory)."""
    import torch

    gpus = torch.cuda.device_count() if device != "cpu" else 0
    have, what = (gpus, "GPUs") if gpus else (cores(), "CPU cores")
    if nproc > have:
        raise UserError(
            f"--nproc {nproc}: this machine has {have} {what} and each worker needs one of its own; "
            f"use --nproc {have} or fewer"
        )
    free = memory_available()
    if free is not None and nproc * WORKER_MEMORY_BYTES > free:
        raise UserError(
            f"--nproc {nproc}: {nproc} workers need about {nproc * WORKER_MEMORY_BYTES / 2**30:.1f} GB "
            f"but {free / 2**30:.1f} GB of memory is free; use fewer workers"
        )


def stop_workers(torchrun: subprocess.Popen, signalled: list[float]) -> int:
    """Wait for torchrun; after a signal, forward SIGTERM to its workers and kill what outlives the grace."""
    forwarded = False
    while True:
        try:
            return torchrun.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            pass
        if signalled and not forwarded:
            for pid in child_pids(torchrun.pid):
                os.kill(pid, signal.SIGTERM)
            forwarded = True
        if signalled and time.monotonic() - signalled[0] > STOP_GRACE_SECONDS:
            os.killpg(torchrun.pid, signal.SIGKILL)


def launch(nproc: int, argv: list[str]) -> tuple[int, str | None, int | None]:
    """Run the workers; returns torchrun's exit code, the run rank 0 announced, and the signal received."""
    from .stopping import drop_option

    state = Path(tempfile.mkstemp(prefix="robeval-launch-")[1])
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={nproc}",
        "-m",
        "robeval",
        *drop_option(argv, "--nproc", takes_value=True),
    ]
    received: list[int] = []
    signalled: list[float] = []

    def on_signal(signum, frame) -> None:
        received.append(signum)
        signalled.append(time.monotonic())

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        env = {"OMP_NUM_THREADS": "1", **os.environ, LAUNCH_STATE: str(state)}  # torchrun's default, without its banner
        torchrun = subprocess.Popen(cmd, env=env, start_new_session=True)
        code = stop_workers(torchrun, signalled)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    announced = state.read_text().strip() or None
    state.unlink(missing_ok=True)
    return code, announced, received[0] if received else None

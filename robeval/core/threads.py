"""How many CPU threads a run uses: every core while the machine is free, fewer while other processes want
cores too (:class:`ThreadGovernor`); the policy and its measurements: docs/speed.md (Batches, memory and threads) and
benchmarks/RESULTS.md.  Why: torch's OpenMP threads spin while idle, and on a shared machine a spinning
thread waits for a core another process holds (two runs started together took 4.4x (issue 12) to 22x the
time of one alone); one thread per process never collides but leaves a free machine's cores idle, and a
passive wait pays a wake-up on every small kernel.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from .errors import UserError
from .machine import child_pids, cores
from .numbers import whole_number

LOOK_EVERY_SECONDS = 0.25  # how often the governor reads the load between units of work


def configure_process(threads: int | None) -> dict[str, str]:
    """With an explicit ``--threads N``, put it into the environment before torch (and its OpenMP and
    MKL runtimes) load; returns what was set.  A user's own ``OMP_NUM_THREADS`` wins over nothing."""
    if threads is None:
        return {}
    os.environ["OMP_NUM_THREADS"] = str(threads)
    return {"OMP_NUM_THREADS": str(threads)}


def _runnable_threads(pid: str) -> int:
    count = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        stat = Path(f"/proc/{pid}/task/{task}/stat").read_text()
        count += stat.rsplit(")", 1)[1].split()[0] == "R"
    return count


def runnable_elsewhere() -> int | None:
    """Runnable threads of other processes right now (None where /proc does not tell).

    This process's child processes (its DataLoader workers decoding or corrupting images) count as
    its own work, not as another job: counting them made a corruption run hand a core to its own
    worker and take 1.49x the time of the clean passes instead of 1.10x (benchmarks/corruptions.py)."""
    try:
        running = int(Path("/proc/loadavg").read_text().split()[3].split("/")[0])
        own = _runnable_threads("self")
        for child in child_pids("self"):
            try:
                own += _runnable_threads(str(child))
            except OSError:  # the worker ended meanwhile
                continue
    except (OSError, ValueError, IndexError):
        return None
    return max(0, running - own)


class ThreadGovernor:
    """Keeps this process's thread count at the cores other processes leave free (see the module),
    never above what the process had when the run began (torch's default: one per core; a library
    user's own ``torch.set_num_threads`` is the ceiling)."""

    def __init__(self, most: int | None = None) -> None:
        import torch

        self.torch = torch
        self.current = torch.get_num_threads()
        self.most = most or self.current
        self.last_look = 0.0
        self.free_looks = 0

    def look(self) -> None:
        """Call between units of work: cheap, and it reads the load at most every LOOK_EVERY_SECONDS."""
        now = time.monotonic()
        if now - self.last_look < LOOK_EVERY_SECONDS:
            return
        self.last_look = now
        others = runnable_elsewhere()
        if others is None:
            return
        want = max(1, min(self.most, self.most - others))
        if want < self.current:
            self._set(want)
        elif want > self.current:
            self.free_looks += 1
            if self.free_looks >= 2:  # the other process is gone, not between two of its kernels
                self._set(want)

    def _set(self, threads: int) -> None:
        self.torch.set_num_threads(threads)
        self.current, self.free_looks = threads, 0

    def restore(self) -> None:
        """Back to the count the run began with: the next model (or the next run in this process)
        starts from there, not from what a busy moment left."""
        if self.current != self.most:
            self._set(self.most)


class FixedThreads:
    """``--threads N`` or a GPU run: nothing to govern."""

    def look(self) -> None:
        pass

    def restore(self) -> None:
        pass


PER_CORE = {  # the counts that cannot usefully exceed this machine's cores, and why
    "--threads": "more threads than cores only wait for each other",
    "--workers": "each worker is a process that decodes on a core of its own",
}


def at_most_cores(option: str, count: int | None) -> None:
    """One line when ``count`` of ``option`` (:data:`PER_CORE`) is more than this machine's cores (a count
    beyond any machine's would overflow torch's thread count, or start that many processes)."""
    have = cores()
    if count is not None and count > have:
        raise UserError(f"{option} {count}: this machine has {have} CPU cores and {PER_CORE[option]}; use "
                        f"{option} {have} or fewer")  # fmt: skip


def set_threads(threads: int) -> None:
    import torch

    if threads < 1:
        raise UserError(f"--threads must be at least 1, got {threads}")
    at_most_cores("--threads", threads)
    torch.set_num_threads(threads)


def threads_from_argv(argv: list[str]) -> int | None:
    """The value of ``--threads N`` / ``--threads=N`` in a command line, if any and well-formed."""
    for i, arg in enumerate(argv):
        value = argv[i + 1] if arg == "--threads" and i + 1 < len(argv) else None
        if arg.startswith("--threads="):
            value = arg.split("=", 1)[1]
        if value is not None:
            number = whole_number(value)  # (the command judges the text itself later, in one line)
            return number if number is not None and 0 < number <= cores() else None
    return None

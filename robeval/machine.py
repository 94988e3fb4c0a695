"""What this machine and this process have: cores, free memory, the process's peak resident memory
and when a process started (Linux /proc; None where it does not tell)."""

from __future__ import annotations

import os
from pathlib import Path


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def status_kb(field: str, pid: str = "self") -> int | None:
    """A ``kB`` figure of ``/proc/PID/status`` (VmRSS, VmHWM, ...)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def cpu_peak_bytes() -> int | None:
    """The process's resident-memory high-water mark (Linux ``VmHWM``)."""
    kb = status_kb("VmHWM")
    return None if kb is None else kb * 1024


def memory_available() -> int | None:
    """Bytes of memory the kernel can give without swapping (``MemAvailable``)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def process_start(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot): with the pid it names one process, even
    after the pid is reused."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def child_pids(pid: int | str) -> list[int]:
    """The child processes of ``pid`` (a launcher's workers, a run's DataLoader workers)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            found += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except OSError:  # a thread that just ended, or a kernel without the file
            continue
    return found

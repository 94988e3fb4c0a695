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


def status_kb(field: str, file: str = "/proc/self/status") -> int | None:
    """A ``kB`` figure of a /proc file: this process's ``status`` (VmRSS, VmHWM, ...) or ``/proc/meminfo``."""
    try:
        for line in Path(file).read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def cpu_peak_bytes() -> int | None:  # the process's resident-memory high-water mark
    kb = status_kb("VmHWM")
    return None if kb is None else kb * 1024


def memory_available() -> int | None:  # bytes the kernel can give without swapping
    kb = status_kb("MemAvailable", "/proc/meminfo")
    return None if kb is None else kb * 1024


def address_space_left() -> int | None:
    """Bytes this process may still map under its address-space limit (``ulimit -v``: past it the allocator
    fails, whatever the machine has free); None without a limit."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not Unix
        return None
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    size = status_kb("VmSize")
    if limit == resource.RLIM_INFINITY or size is None:
        return None
    return max(limit - size * 1024, 0)


def memory_free() -> int | None:
    """Bytes this process can still allocate: the kernel's ``MemAvailable``, or less where the process's
    address-space limit leaves less (None where neither is known)."""
    known = [b for b in (memory_available(), address_space_left()) if b is not None]
    return min(known) if known else None


def process_start(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot): with the pid it names one process, even
    after the pid is reused.  None when there is none, or it has exited and waits to be reaped (a
    zombie: in a container whose first process reaps nothing, a killed run's workers stay so)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return fields[19]


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

"""The process that holds a stored run while it evaluates it (``runs.holder``): who it is, and whether it
still runs (a second ``--resume`` of a held run is refused while it does)."""

from __future__ import annotations

import os
import socket
from datetime import datetime, timezone
from typing import Any

from ..core.json_input import load_json
from ..core.machine import process_start


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


HOLDER_SILENCE_SECONDS = 1800  # a holder on another machine that wrote nothing for this long is taken as gone


def this_process() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid(), "start": process_start(os.getpid()), "beat": now()}


def stored_holder(text: str | None) -> dict[str, Any] | None:
    """The process a stored run names as its holder, or None (none, or what no robeval wrote)."""
    holder = load_json(text, "a run's holder") if text else None
    return holder if isinstance(holder, dict) and {"host", "pid"} <= set(holder) else None


def holder_alive(holder: dict[str, Any]) -> bool:
    """Whether the process that holds a run still runs (same machine), or wrote lately (another one)."""
    if holder.get("host") != socket.gethostname():
        beat = datetime.fromisoformat(holder.get("beat", "1970-01-01T00:00:00+00:00"))
        return (datetime.now(timezone.utc) - beat).total_seconds() < HOLDER_SILENCE_SECONDS
    start = process_start(int(holder["pid"]))
    if start is not None or holder.get("start") is not None:
        return start == holder.get("start")
    try:
        os.kill(int(holder["pid"]), 0)
        return True
    except OSError:
        return False

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


def stored_holder(text: object) -> dict[str, Any] | None:
    """The process a stored run names as its holder, or None: none (NULL, which pandas reads back as a float
    NaN: a missing value is never taken for text), or what no robeval wrote (a host, a pid, a beat in time)."""
    holder = load_json(text, "a run's holder") if isinstance(text, str) and text else None
    if not isinstance(holder, dict) or not isinstance(holder.get("host"), str):
        return None
    pid, beat = holder.get("pid"), holder.get("beat", "1970-01-01T00:00:00+00:00")
    if type(pid) is not int or not 0 < pid < 2**31 or not isinstance(beat, str):
        return None
    try:
        return holder if datetime.fromisoformat(beat).tzinfo is not None else None
    except ValueError:
        return None


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

"""How a command stops: Ctrl-C and SIGTERM keep a run resumable, and the user is told the exact
command that continues it (``robeval run`` and ``robeval reproduce`` alike)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from ..report.escaping import TerminalConsole

RESUMABLE_COMMANDS = ("run", "reproduce")
INVOKED: list[str] = []  # the arguments of this command (a resume command repeats them)


STOPPING: list[int] = []  # the signal that asked this process to stop, once one did


class Terminated(KeyboardInterrupt):
    """SIGTERM (a scheduler's stop, ``kill``): handled as Ctrl-C, so the run is kept resumable."""


def raise_terminated(signum, frame) -> None:
    STOPPING.append(signum)
    raise Terminated()


def under_launcher() -> bool:
    """A worker that ``robeval run --nproc`` started: its launcher reports an interruption, not it."""
    from ..evaluation.distributed import LAUNCH_STATE, launched_by_torchrun

    return launched_by_torchrun() and LAUNCH_STATE in os.environ


def drop_option(argv: list[str], name: str, takes_value: bool) -> list[str]:
    """``argv`` without ``name`` (``--name VALUE``, ``--name=VALUE`` or a bare ``--name``)."""
    kept: list[str] = []
    skip_next = False
    for i, arg in enumerate(argv):
        if skip_next:
            skip_next = False
            continue
        if arg == name:
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            skip_next = takes_value and nxt is not None and not nxt.startswith("-")
            continue
        if arg.startswith(name + "="):
            continue
        kept.append(arg)
    return kept


def resume_command(argv: list[str], run_id: str) -> str:
    """The command line that continues run ``run_id``: the same options plus ``--resume RUN_ID``."""
    kept = drop_option(argv, "--resume", takes_value=True)
    if not kept or kept[0] not in RESUMABLE_COMMANDS:
        kept.insert(0, "run")
    return shlex.join(["robeval", *kept, "--resume", run_id])


def report_interrupt(exc: KeyboardInterrupt, store: Path) -> int:
    """Say what was kept and how to resume; the exit code (130 Ctrl-C, 143 SIGTERM)."""
    run_id = getattr(exc, "run_id", None)
    what = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
    err = TerminalConsole(stderr=True)
    err.print(f"{what}; finished batches are kept in {store}.", markup=False, soft_wrap=True)
    if run_id:
        err.print(f"resume with: {resume_command(INVOKED, run_id)}", markup=False, soft_wrap=True)
    return 143 if isinstance(exc, Terminated) else 130

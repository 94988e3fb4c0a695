"""Opening a run in the store: a new one, or a stored one resumed (its configuration compared, its
holder checked, units that a killed worker left in its own file merged), and letting go of it when
the run stops.  The store is the one the API opened (robeval.results.store), used through its methods.
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass
from typing import Any

from ..errors import StoreFull, UserError
from ..options import identity_difference, newest_matching
from .distributed import DistContext
from .plan import RunPlan
from .run_store import RunStore
from .unit_records import Unit


@dataclass
class OpenRun:
    """The run this process writes to: its id, the units already stored, where units go."""

    run_id: str | None
    done: set[Unit]
    previous: dict[str, Any]
    store: RunStore | None  # the store (rank 0), a worker's own store file, or None (records kept in memory)

    @property
    def stored_id(self) -> str:
        """The run's id where it has a store (a run kept in memory may have none: a bug to ask then)."""
        if self.run_id is None:
            raise RuntimeError("a run kept in memory has no id in a store")
        return self.run_id


def latest_matching_run(store: RunStore, identity: dict[str, Any]) -> str:
    """The newest unfinished run in ``store`` with this configuration (``--resume`` alone)."""
    unfinished = store.unfinished_runs()
    found = newest_matching(unfinished, identity)
    if found is not None:
        return found
    if not unfinished:
        raise UserError(f"--resume: no unfinished run in {store.path}")
    newest, stored = unfinished[0]
    raise UserError(
        f"--resume: no unfinished run in {store.path} has this configuration (the newest, {newest}, differs "
        f"in {identity_difference(stored, identity)}); repeat its options or pass --resume RUN_ID"
    )


def _reopen(store: RunStore, resume: str, identity: dict[str, Any], outline: dict[str, Any]) -> tuple[str, set, dict]:
    for path in store.worker_paths():  # units a killed worker left in its own file count as done
        store.merge_from(path, resume)
    stored = store.run(resume)
    diff = identity_difference(stored["config"], identity)
    if diff:
        raise UserError(f"--resume {resume}: the configuration differs from the stored run ({diff})")
    store.hold(resume)
    previous = stored["info"] or {}
    store.update_run(resume, status="running", info={**previous, "plan": outline})
    return resume, store.done_units(resume), previous


def open_run(
    plan: RunPlan, store: RunStore | None, resume: str | None, ctx: DistContext, outline: dict[str, Any]
) -> OpenRun:
    """Create the run, or check and reopen ``resume``; every rank learns the run id from rank 0.  The
    run's ``outline`` is stored at once, so an interrupted run's tables can tell what it lacks."""
    identity = plan.identity()
    run_id, error = None, None
    done: set[Unit] = set()
    previous: dict[str, Any] = {}
    if store is not None and ctx.is_main:
        try:
            if resume is not None:
                run_id, done, previous = _reopen(store, resume, identity, outline)
            else:
                run_id = store.create_run(identity, {"plan": outline}, plan.config.protocol)
        except UserError as exc:
            error = str(exc)
    run_id, done, previous, error = ctx.broadcast((run_id, done, previous, error))
    if error:
        raise UserError(error)
    if store is not None and not ctx.is_main:
        store.ensure_run(run_id, identity, plan.config.protocol)
    return OpenRun(run_id, done, previous, store)


def mark_stopped(opened: OpenRun, ctx: DistContext, exc: BaseException) -> None:
    """Ctrl-C / SIGTERM / a full store: the run is ``interrupted`` (resumable); anything else: ``failed``.
    Either way this process lets go of it (best effort: a full disk may refuse even that)."""
    resumable = isinstance(exc, (KeyboardInterrupt, StoreFull))
    if opened.store is not None and opened.run_id is not None and ctx.is_main:
        with contextlib.suppress(
            sqlite3.Error, UserError
        ):  # else it stays "running": its holder is gone, so a resume takes it over
            opened.store.release(opened.run_id, status="interrupted" if resumable else "failed")
    if resumable and opened.run_id is not None:
        setattr(exc, "run_id", opened.run_id)  # noqa: B010 - read back by the CLI's resume message

"""The evaluation engine: models x batches x eps x attacks -> per-example records in the store.

``run_evaluation`` checks everything a user can get wrong before it creates a run (so a typo leaves
no empty failed run behind), opens or resumes the run, lets :class:`~.model_run.ModelEvaluation`
do each model's batches, and reads the records back for the summary.  What a run evaluates lives in
``config.py``, the wrapping of each attack call in ``attack_calls.py``, the run's description in
``run_info.py`` and the exchange between workers in ``distributed.py``.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..attacks.transfer import release_sources
from ..errors import UserError
from ..store import Store, StoreFull, worker_store_path, worker_store_paths
from .attack_calls import AttackBoundsError, PassCounter, verify_adversarial
from .config import EvalConfig, config_difference, model_jobs, semantic_config, validate_config
from .distributed import SINGLE, DistContext, announce_run
from .metrics import RECORD_COLUMNS
from .model_run import ModelEvaluation, ModelFailure, Unit
from .preflight import preflight
from .progress import NullReporter, Reporter, model_bars, unit_key
from .protocols import get_protocol
from .run_info import RunState, describe_run, run_plan, run_summary

__all__ = ["AttackBoundsError", "EvalConfig", "EvalResult", "ModelFailure", "NullReporter", "PassCounter", "Reporter",
           "run_evaluation", "verify_adversarial"]


@dataclass
class EvalResult:
    records: pd.DataFrame
    summary: pd.DataFrame
    run: dict[str, Any]
    files: dict[str, Path] = field(default_factory=dict)  # results.csv / .md / run.json, when written


@dataclass
class OpenRun:
    """The run this process writes to: its id, the units already stored, where units go."""

    run_id: str | None
    done: set[Unit]
    previous: dict[str, Any]
    store: Any  # the store (rank 0), a worker's own store file, or None (records kept in memory)


def open_run(config: EvalConfig, store: Any, resume: str | None, ctx: DistContext, plan: dict[str, Any]) -> OpenRun:
    """Create the run, or check and reopen ``resume``; every rank learns the run id from rank 0.  The
    run's ``plan`` is stored at once, so an interrupted run's tables can tell what it lacks."""
    semantic = semantic_config(config)
    run_id, done, previous, error = None, set(), {}, None
    if store is not None and ctx.is_main:
        if resume is not None:  # units a killed worker left in its own file count as done (any worker count)
            for path in worker_store_paths(store.path):
                store.merge_from(path, resume)
        try:
            if resume is not None:
                stored = store.run(resume)
                diff = config_difference(stored["config"], semantic)
                if diff:
                    raise UserError(f"--resume {resume}: the configuration differs from the stored run ({diff})")
                store.hold(resume)
                run_id, done, previous = resume, store.done_units(resume), stored["info"] or {}
                store.update_run(run_id, status="running", info={**previous, "plan": plan})
            else:
                run_id = store.create_run(semantic, {"plan": plan}, config.protocol, None, 0)
        except UserError as exc:
            error = str(exc)
    run_id, done, previous, error = ctx.broadcast((run_id, done, previous, error))
    if error:
        raise UserError(error)
    if store is not None and not ctx.is_main:
        store.ensure_run(run_id, semantic, config.protocol)
    return OpenRun(run_id, done, previous, store)


@dataclass
class PreparedRun:
    """A run checked and ready: its data, models, plan, store (opened) and the run it resumes (resolved)."""

    config: EvalConfig
    data: Any
    jobs: list
    plan: dict[str, Any]
    store: Any
    resume: str | None


def open_store(store: Any, ctx: DistContext) -> Any:
    """The :class:`~robeval.store.Store` for a path (or a Store, or None); a worker of a distributed run
    gets its own file next to it, which rank 0 merges."""
    if store is None:
        return None
    path = store.path if isinstance(store, Store) else Path(store)
    if not ctx.is_main:
        return Store(worker_store_path(path, ctx.rank))
    return store if isinstance(store, Store) else Store(path)


def prepare_run(config: EvalConfig, store: Any = None, resume: str | None = None,
                ctx: DistContext = SINGLE) -> PreparedRun:
    """Everything a user can get wrong, checked before any work and before the store is touched;
    ``resume="latest"`` becomes the newest unfinished run with this configuration."""
    validate_config(config)
    data = preflight(config)
    jobs = model_jobs(config)
    plan = run_plan(jobs, config, data.num_batches(config.resolved_batch_size()))
    db = open_store(store, ctx)
    if resume is not None and db is None and ctx.is_main:
        raise UserError("resume needs a results store")
    if resume == "latest" and ctx.is_main:
        resume = latest_matching_run(db, config)
    return PreparedRun(config, data, jobs, plan, db, resume)


def latest_matching_run(db: Any, config: EvalConfig) -> str:
    """The newest unfinished run in ``db`` with the same configuration as ``config`` (``--resume`` alone)."""
    current = semantic_config(config)
    unfinished = db.unfinished_runs()
    for run_id, stored in unfinished:
        if config_difference(stored, current) is None:
            return run_id
    if not unfinished:
        raise UserError(f"--resume: no unfinished run in {db.path}")
    newest, stored = unfinished[0]
    raise UserError(f"--resume: no unfinished run in {db.path} has this configuration (the newest, {newest}, differs in "
                    f"{config_difference(stored, current)}); repeat its options or pass --resume RUN_ID")


def run_evaluation(config: EvalConfig, reporter: Reporter | None = None, store: Any = None,
                   resume: str | None = None, ctx: DistContext | None = None) -> EvalResult:
    """Evaluate every model of ``config`` on its data under every eps and attack.

    With a ``store`` (a path or :class:`robeval.store.Store`) each finished unit is written as it
    completes and ``resume`` (a run id, or "latest") skips the units already stored; the returned
    records are read back from the store.
    """
    ctx = ctx or SINGLE
    return execute_run(prepare_run(config, store, resume, ctx), reporter, ctx)


def execute_run(prepared: PreparedRun, reporter: Reporter | None = None, ctx: DistContext = SINGLE) -> EvalResult:
    """Open (or reopen) the run and evaluate each model's pending batches; a model that fails stops
    alone, Ctrl-C / SIGTERM / a full store leave the run resumable."""
    reporter, config, jobs = reporter or NullReporter(), prepared.config, prepared.jobs
    opened = open_run(config, prepared.store, prepared.resume, ctx, prepared.plan)
    announce_run(opened.run_id, ctx)
    state = RunState(opened.previous, started=time.time())
    state.plan = prepared.plan
    try:
        for index, job in enumerate(jobs):
            try:
                _evaluate_model(job, config, prepared.data, opened, state, reporter if ctx.is_main else NullReporter(),
                                ctx, (index + 1, len(jobs)))
            except ModelFailure as exc:
                reporter.stop()
                state.failed_models[job.name] = str(exc)
                reporter.note(f"warning: stopped model {job.name}: {exc}")
    except BaseException as exc:
        reporter.stop()
        _mark_stopped(opened, ctx, exc)
        raise
    finally:
        release_sources()  # transfer attacks' source model and crafted images
    if not ctx.is_main:  # rank 0 reads the records back and writes the summary
        return EvalResult(pd.DataFrame(columns=RECORD_COLUMNS), pd.DataFrame(), {"run_id": opened.run_id, "rank": ctx.rank})
    return _finish(config, jobs, opened, state, ctx)


def _mark_stopped(opened: OpenRun, ctx: DistContext, exc: BaseException) -> None:
    """Ctrl-C / SIGTERM / a full store: the run is ``interrupted`` (resumable); anything else: ``failed``.
    Either way this process lets go of it (best effort: a full disk may refuse even that)."""
    resumable = isinstance(exc, (KeyboardInterrupt, StoreFull))
    if opened.store is not None and opened.run_id is not None and ctx.is_main:
        try:
            opened.store.release(opened.run_id, status="interrupted" if resumable else "failed")
        except (sqlite3.Error, UserError):
            pass  # the run stays "running"; its holder is gone, so a resume takes it over
    if resumable and opened.run_id is not None:
        exc.run_id = opened.run_id  # type: ignore[union-attr]


def _evaluate_model(job, config: EvalConfig, data, opened: OpenRun, state: RunState, reporter: Reporter,
                    ctx: DistContext, position: tuple[int, int]) -> None:
    """One model's pending batches (this rank's share), each finished unit stored at once."""
    evaluation = ModelEvaluation(job, config, get_protocol(config.protocol), data, opened.done,
                                 need_checks=ctx.is_main and job.name not in state.model_checks)
    state.models_meta[job.name] = evaluation.meta
    state.data_info = evaluation.data.info()
    units_of_model = evaluation.data.num_batches(evaluation.batch_size) * len(config.eps) * len(evaluation.units)
    state.total_units += units_of_model
    if opened.store is not None and ctx.is_main:  # progress of `robeval runs`; every model sees the same examples
        opened.store.update_run(opened.run_id, total_units=units_of_model * position[1], data_identity=data.identity)
    pending = evaluation.pending()
    mine = pending[ctx.rank::ctx.world]
    share = sorted(set(evaluation.todo) - set(pending)) + mine
    worker = f" (worker 1 of {ctx.world}: its share of the batches)" if ctx.active else ""
    reporter.start(model_bars(evaluation, share, opened.done), job.name + worker, position)

    def key(unit: Unit) -> tuple[str, ...]:
        return unit_key(unit[0], unit[1], unit[2], evaluation.condition_names)

    def deliver(unit: Unit, seconds: float, columns: dict[str, list], n: int) -> None:
        if opened.store is not None:
            opened.store.write_units(opened.run_id, [(unit, seconds)], columns)
        elif ctx.is_main:
            for c in RECORD_COLUMNS:
                state.memory[c].extend(columns[c])
            state.done_units[unit[:3]] = state.done_units.get(unit[:3], 0) + 1
        if unit[2] != "clean":
            reporter.advance(key(unit), n, seconds)

    partial = getattr(reporter, "partial", None)  # a reporter written before in-unit progress may lack it
    outcome = evaluation.run(mine, deliver, stop_on_error=not ctx.active,
                             progress=None if partial is None else lambda unit, images: partial(key(unit), images))
    _collect(job, [outcome], opened, state, ctx)
    reporter.stop()


def _collect(job, outcomes: list, opened: OpenRun, state: RunState, ctx: DistContext) -> None:
    """Every worker's outcome for ``job`` (their units merged into the store), or its error raised."""
    outcomes = ctx.gather(outcomes[0]) if ctx.active else outcomes
    if ctx.active and ctx.is_main and opened.store is not None:  # every worker is done with this model
        for rank in range(1, ctx.world):
            opened.store.merge_from(worker_store_path(opened.store.path, rank), opened.run_id)
    errors = [o.error for o in outcomes if o.error]
    if errors:
        kind, message = errors[0]
        raise {"ModelFailure": ModelFailure, "UserError": UserError, "StoreFull": StoreFull}.get(kind, AttackBoundsError)(message)
    state.absorb(job.name, outcomes)


def _finish(config: EvalConfig, jobs, opened: OpenRun, state: RunState, ctx: DistContext) -> EvalResult:
    """Records read back, the summary, the run's description; the run is marked finished."""
    store = opened.store
    state.status = "failed" if state.failed_models else "finished"
    if store is not None:
        records, done = store.records(opened.run_id), store.unit_counts(opened.run_id)
    else:
        records = pd.DataFrame(state.memory).sort_values(["model", "eps", "attack", "example"], kind="stable")
        records, done = records.reset_index(drop=True), state.done_units
    if records.empty and state.failed_models:
        if store is not None:
            store.release(opened.run_id, status="failed")
        raise UserError("no model could be evaluated: " + "; ".join(f"{m}: {e}" for m, e in state.failed_models.items()))
    run = describe_run(config, opened.run_id, state, ctx.world)
    summary = run_summary(records, run, done_units=done)
    run["flags"] = state.flags(summary)
    if store is not None and ctx.active:  # every worker's units are merged: drop their files
        for rank in range(1, ctx.world):
            for suffix in ("", "-wal", "-shm"):
                Path(f"{worker_store_path(store.path, rank)}{suffix}").unlink(missing_ok=True)
    if store is not None:
        store.release(opened.run_id, status=state.status, finished=run["finished"], info=run,
                         data_identity=state.data_info.get("identity"), total_units=state.total_units)
    return EvalResult(records, summary, run)

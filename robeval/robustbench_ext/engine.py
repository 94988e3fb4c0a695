"""The evaluation engine: models x batches x eps x attacks -> per-example records in the store.

``run_evaluation`` checks everything a user can get wrong before it creates a run (so a typo leaves
no empty failed run behind), opens or resumes the run, lets :class:`~.model_run.ModelEvaluation`
do each model's batches, and reads the records back for the summary.  What a run evaluates lives in
``config.py``, the wrapping of each attack call in ``attack_calls.py``, the run's description in
``run_info.py`` and the exchange between workers in ``distributed.py``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol as TypingProtocol

import pandas as pd

from ..attacks.transfer import release_sources
from ..errors import UserError
from ..store import worker_store_path
from .attack_calls import AttackBoundsError, PassCounter, verify_adversarial
from .config import EvalConfig, config_difference, model_jobs, semantic_config, validate_config
from .distributed import SINGLE, DistContext
from .metrics import RECORD_COLUMNS
from .model_run import ModelEvaluation, ModelFailure, Unit
from .preflight import preflight
from .protocols import get_protocol
from .run_info import RunState, describe_run, run_summary

__all__ = ["AttackBoundsError", "EvalConfig", "EvalResult", "ModelFailure", "NullReporter", "PassCounter", "Reporter",
           "run_evaluation", "verify_adversarial"]


class Reporter(TypingProtocol):
    def start(self, tasks: list[tuple[str, str, str]], batches: int, examples: int) -> None: ...
    def advance(self, model: str, eps: str, attack: str, images: int, seconds: float | None = None) -> None: ...
    def note(self, text: str) -> None: ...
    def stop(self) -> None: ...


class NullReporter:
    def start(self, tasks, batches, examples) -> None:
        pass

    def advance(self, model, eps, attack, images, seconds=None) -> None:
        pass

    def note(self, text) -> None:
        pass

    def stop(self) -> None:
        pass


@dataclass
class EvalResult:
    records: pd.DataFrame
    summary: pd.DataFrame
    run: dict[str, Any]


@dataclass
class OpenRun:
    """The run this process writes to: its id, the units already stored, where units go."""

    run_id: str | None
    done: set[Unit]
    previous: dict[str, Any]
    store: Any  # the store (rank 0), a worker's own store file, or None (records kept in memory)


def open_run(config: EvalConfig, store: Any, resume: str | None, ctx: DistContext) -> OpenRun:
    """Create the run, or check and reopen ``resume``; every rank learns the run id from rank 0."""
    semantic = semantic_config(config)
    run_id, done, previous, error = None, set(), {}, None
    if store is not None and ctx.is_main:
        if ctx.active and resume is not None:  # units a killed worker left in its own file count as done
            for rank in range(1, ctx.world):
                store.merge_from(worker_store_path(store.path, rank), resume)
        try:
            if resume is not None:
                stored = store.run(resume)
                diff = config_difference(stored["config"], semantic)
                if diff:
                    raise UserError(f"--resume {resume}: the configuration differs from the stored run ({diff})")
                run_id, done, previous = resume, store.done_units(resume), stored["info"] or {}
                store.update_run(run_id, status="running")
            else:
                run_id = store.create_run(semantic, {}, config.protocol, None, 0)
        except UserError as exc:
            error = str(exc)
    run_id, done, previous, error = ctx.broadcast((run_id, done, previous, error))
    if error:
        raise UserError(error)
    if store is not None and not ctx.is_main:
        store.ensure_run(run_id, semantic, config.protocol)
    return OpenRun(run_id, done, previous, store)


def run_evaluation(config: EvalConfig, reporter: Reporter | None = None, store: Any = None,
                   resume: str | None = None, ctx: DistContext | None = None) -> EvalResult:
    """Evaluate every model of ``config`` on its data under every eps and attack.

    With a ``store`` (:class:`robeval.store.Store`; in a distributed run each worker's own file) each
    finished unit is written as it completes and ``resume`` (a run id) skips the units already stored;
    the returned records are read back from the store.
    """
    reporter, ctx = reporter or NullReporter(), ctx or SINGLE
    validate_config(config)
    data = preflight(config)
    opened = open_run(config, store, resume, ctx)
    state = RunState(opened.previous, started=time.time())
    jobs = model_jobs(config)
    try:
        for job in jobs:
            try:
                _evaluate_model(job, config, data, opened, state, reporter if ctx.is_main else NullReporter(), ctx,
                                total_jobs=len(jobs))
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
    """Ctrl-C / SIGTERM: the run is ``interrupted`` (resumable); anything else: ``failed``."""
    if opened.store is not None and opened.run_id is not None and ctx.is_main:
        opened.store.update_run(opened.run_id, status="interrupted" if isinstance(exc, KeyboardInterrupt) else "failed")
    if isinstance(exc, KeyboardInterrupt) and opened.run_id is not None:
        exc.run_id = opened.run_id  # type: ignore[attr-defined]


def _evaluate_model(job, config: EvalConfig, data, opened: OpenRun, state: RunState, reporter: Reporter,
                    ctx: DistContext, total_jobs: int) -> None:
    evaluation = ModelEvaluation(job, config, get_protocol(config.protocol), data, opened.done,
                                 need_checks=ctx.is_main and job.name not in state.model_checks)
    state.models_meta[job.name] = evaluation.meta
    state.data_info = evaluation.data.info()
    units_of_model = evaluation.data.num_batches(evaluation.batch_size) * len(config.eps) * len(evaluation.units)
    state.total_units += units_of_model
    if opened.store is not None and ctx.is_main:  # progress of `robeval runs`; every model sees the same examples
        opened.store.update_run(opened.run_id, total_units=units_of_model * total_jobs, data_identity=data.identity)
    tasks = [(job.name, e.text, a) for e in config.eps for a in evaluation.units if a != "clean"]
    reporter.start(tasks, len(evaluation.todo), len(data.indices))
    for model, eps, attack in tasks:
        finished = evaluation.finished_images(eps, attack, opened.done)
        if finished:
            reporter.advance(model, eps, attack, finished)

    def deliver(unit: Unit, seconds: float, columns: dict[str, list], n: int) -> None:
        if opened.store is not None:
            opened.store.write_units(opened.run_id, [(unit, seconds)], columns)
        elif ctx.is_main:
            for c in RECORD_COLUMNS:
                state.memory[c].extend(columns[c])
        if unit[2] != "clean":
            reporter.advance(unit[0], unit[1], unit[2], n, seconds)

    mine = evaluation.pending()[ctx.rank::ctx.world]
    outcome = evaluation.run(mine, deliver, stop_on_error=not ctx.active)
    outcomes = ctx.gather(outcome) if ctx.active else [outcome]
    if ctx.active and ctx.is_main and opened.store is not None:  # every worker is done with this model
        for rank in range(1, ctx.world):
            opened.store.merge_from(worker_store_path(opened.store.path, rank), opened.run_id)
    errors = [o.error for o in outcomes if o.error]
    if errors:
        kind, message = errors[0]
        raise {"ModelFailure": ModelFailure, "UserError": UserError}.get(kind, AttackBoundsError)(message)
    state.absorb(job.name, outcomes)
    reporter.stop()


def _finish(config: EvalConfig, jobs, opened: OpenRun, state: RunState, ctx: DistContext) -> EvalResult:
    """Records read back, the summary, the run's description; the run is marked finished."""
    store = opened.store
    if len(state.failed_models) == len(jobs):
        if store is not None:
            store.update_run(opened.run_id, status="failed")
        raise UserError("no model could be evaluated: " + "; ".join(f"{m}: {e}" for m, e in state.failed_models.items()))
    if store is not None:
        records = store.records(opened.run_id)
    else:
        records = pd.DataFrame(state.memory).sort_values(["model", "eps", "attack", "example"], kind="stable")
    records = records[~records["model"].isin(state.failed_models)].reset_index(drop=True)
    run = describe_run(config, opened.run_id, state, ctx.world)
    summary = run_summary(records, run)
    run["flags"] = state.flags(summary)
    if store is not None and ctx.active:  # every worker's units are merged: drop their files
        for rank in range(1, ctx.world):
            for suffix in ("", "-wal", "-shm"):
                Path(f"{worker_store_path(store.path, rank)}{suffix}").unlink(missing_ok=True)
    if store is not None:
        store.update_run(opened.run_id, status="finished", finished=run["finished"], info=run,
                         data_identity=state.data_info.get("identity"), total_units=state.total_units)
    return EvalResult(records, summary, run)

"""The evaluation engine: models x batches x eps x attacks -> per-example records in the store.

:func:`prepare_run` checks everything a user can get wrong before a run exists (so a typo leaves no
empty failed run behind) and resolves the plan once; :func:`execute_run` opens or resumes the run
(:mod:`.opening`), lets :class:`~.model_run.ModelEvaluation` do each model's batches, and reads the
records back.  Summaries and flags are made from those records by robeval.results (the API does it),
so a finished run and a stored run are summarised by the same code.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from ..attacks.transfer import SourceModel
from ..data.examples import EvalData
from ..defaults import CLEAN, RECORD_COLUMNS
from ..errors import StoreFull, UserError
from ..models import GivenModel
from ..options import EvalConfig
from ..precision import slower_here
from .attack_guards import AttackBoundsError
from .distributed import SINGLE, DistContext, announce_run
from .model_run import ModelEvaluation
from .opening import OpenRun, latest_matching_run, mark_stopped, open_run
from .plan import ModelJob, RunPlan, make_plan
from .preflight import preflight
from .profiling import gflops_per_image
from .progress import NullReporter, Reporter, model_bars, unit_key
from .run_info import RunState, describe_run
from .run_store import RunStore, StoreOpener
from .unit_records import ModelFailure, Unit, UnitCurve


@dataclass
class EvalResult:
    records: pd.DataFrame
    summary: pd.DataFrame
    run: dict[str, Any]
    files: dict[str, Path] = field(default_factory=dict)  # results.csv / .md / run.json, when written
    done_units: dict[tuple[str, str, str], int] = field(default_factory=dict)  # batches per (model, eps, attack)
    curves: pd.DataFrame = field(default_factory=pd.DataFrame)  # convergence-curve points (store.curves' rows)


@dataclass
class PreparedRun:
    """A run checked and ready: its plan, data, store and the run it resumes (resolved)."""

    plan: RunPlan
    data: EvalData
    store: RunStore | None
    resume: str | None

    def outline(self) -> dict[str, Any]:
        return self.plan.outline(self.data.num_batches(self.plan.batch_size))


@dataclass
class ActiveRun:
    """A run in progress: what it was prepared from, the opened run, what it has learnt so far, where
    its progress goes, its distributed context and the transfer source."""

    prepared: PreparedRun
    opened: OpenRun
    state: RunState
    reporter: Reporter
    ctx: DistContext
    source: SourceModel | None


def prepare_run(
    config: EvalConfig,
    store: RunStore | StoreOpener | None = None,
    resume: str | None = None,
    ctx: DistContext = SINGLE,
    given: dict[str, GivenModel] | None = None,
) -> PreparedRun:
    """The plan and the data, checked before the run exists; ``store`` is a store object (rank 0's, or
    a worker's own file), a function that opens one once the checks have passed, or None;
    ``resume="latest"`` becomes the newest unfinished run with this configuration; ``given``: the
    modules given from Python (the plan carries them)."""
    plan = make_plan(config, given)
    data = preflight(plan)
    opened = store() if callable(store) else store
    if resume is not None and opened is None and ctx.is_main:
        raise UserError("resume needs a results store")
    if resume == "latest" and opened is not None and ctx.is_main:
        resume = latest_matching_run(opened, plan.identity())
    return PreparedRun(plan, data, opened, resume)


def load_source(plan: RunPlan) -> SourceModel | None:
    """The transfer attacks' source model (``--source-model NAME[=CHECKPOINT]``), loaded once per run;
    with ``--weights random`` a network seeded by the run's seed."""
    config = plan.config
    if not config.source_model:
        return None
    from ..models import load_model

    name, _, checkpoint = config.source_model.partition("=")
    with torch.random.fork_rng():
        torch.manual_seed(config.seed)
        model = load_model(
            name,
            checkpoint=checkpoint or None,
            trust_checkpoint=config.trust_checkpoint,
            device=plan.device,
            pretrained=config.weights != "random",
        )
    return SourceModel(model, config.source_model)


def run_evaluation(
    config: EvalConfig,
    reporter: Reporter | None = None,
    store: RunStore | StoreOpener | None = None,
    resume: str | None = None,
    ctx: DistContext | None = None,
) -> EvalResult:
    """Evaluate every model of ``config``; records and the run's description (no summary: see
    :func:`robeval.api.evaluate_full`)."""
    ctx = ctx or SINGLE
    return execute_run(prepare_run(config, store, resume, ctx), reporter, ctx)


def execute_run(prepared: PreparedRun, reporter: Reporter | None = None, ctx: DistContext = SINGLE) -> EvalResult:
    """Open (or reopen) the run and evaluate each model's pending batches; a model that fails stops
    alone, Ctrl-C / SIGTERM / a full store leave the run resumable."""
    reporter, plan = reporter or NullReporter(), prepared.plan
    opened = open_run(plan, prepared.store, prepared.resume, ctx, prepared.outline())
    announce_run(opened.run_id, ctx)
    slow = slower_here(plan.precision, plan.device.type)
    if slow and ctx.is_main:
        reporter.note(slow)
    state = RunState(opened.previous, started=time.time())
    state.plan = prepared.outline()
    source = load_source(plan)
    active = ActiveRun(prepared, opened, state, reporter if ctx.is_main else NullReporter(), ctx, source)
    try:
        for index, job in enumerate(plan.jobs):
            _evaluate_or_stop(job, active, (index + 1, len(plan.jobs)))
    except BaseException as exc:
        reporter.stop()
        mark_stopped(opened, ctx, exc)
        raise
    finally:
        if source is not None:
            source.close()  # its crafted images
    if not ctx.is_main:  # rank 0 reads the records back
        return EvalResult(
            pd.DataFrame(columns=RECORD_COLUMNS), pd.DataFrame(), {"run_id": opened.run_id, "rank": ctx.rank}
        )
    return _finish(plan, opened, state, ctx)


def _evaluate_or_stop(job: ModelJob, active: ActiveRun, position: tuple[int, int]) -> None:
    """One model; a model that fails stops alone (the run goes on with the next)."""
    try:
        _evaluate_model(job, active, position)
    except ModelFailure as exc:
        active.reporter.stop()
        active.state.failed_models[job.name] = str(exc)
        active.reporter.note(f"warning: stopped model {job.name}: {exc}")


def _evaluate_model(job: ModelJob, active: ActiveRun, position: tuple[int, int]) -> None:
    """One model's pending batches (this rank's share), each finished unit stored at once."""
    prepared, opened, state, reporter, ctx = active.prepared, active.opened, active.state, active.reporter, active.ctx
    evaluation = ModelEvaluation(
        job,
        prepared.plan,
        prepared.data,
        opened.done,
        need_checks=ctx.is_main and job.name not in state.model_checks,
        source=active.source,
    )
    _record_model(evaluation, prepared, opened, state, ctx, position[1])
    pending = evaluation.pending()
    mine = pending[ctx.rank :: ctx.world]
    share = sorted(set(evaluation.todo) - set(pending)) + mine
    worker = f" (worker 1 of {ctx.world}: its share of the batches)" if ctx.active else ""
    reporter.start(model_bars(evaluation, share, opened.done), job.name + worker, position)

    def key(unit: Unit) -> tuple[str, ...]:
        return unit_key(unit[0], unit[1], unit[2], evaluation.condition_names)

    def deliver(unit: Unit, seconds: float, columns: dict[str, list], n: int, curve: UnitCurve | None = None) -> None:
        if opened.store is not None:
            opened.store.write_units(opened.stored_id, [(unit, seconds)], columns, [(unit, curve)] if curve else [])
        elif ctx.is_main:
            state.keep(unit, columns, curve)
        if unit[2] != CLEAN:
            reporter.advance(key(unit), n, seconds)

    partial = getattr(reporter, "partial", None)  # a reporter written before in-unit progress may lack it
    outcome = evaluation.run(
        mine,
        deliver,
        stop_on_error=not ctx.active,
        progress=None if partial is None else lambda unit, images: partial(key(unit), images),
    )
    _collect(job, [outcome], opened, state, ctx)
    reporter.stop()


def _record_model(
    evaluation: ModelEvaluation, prepared: PreparedRun, opened: OpenRun, state: RunState, ctx: DistContext, models: int
) -> None:
    """What the run learns of a model before its batches: its meta, the data, the units (for `robeval runs`);
    of a module it carries, the FLOPs per image too (a report in another process cannot count them)."""
    state.models_meta[evaluation.job.name] = evaluation.meta
    if evaluation.job.given is not None:
        model = evaluation.model
        flops = gflops_per_image(model.net, model.meta.input_size, evaluation.device)
        state.models_meta[evaluation.job.name]["gflops_per_image"] = flops
    state.data_info = evaluation.data.info()
    units = evaluation.data.num_batches(evaluation.batch_size) * len(prepared.plan.config.eps) * len(evaluation.units)
    state.total_units += units
    if opened.store is not None and ctx.is_main:  # every model sees the same examples
        opened.store.update_run(opened.stored_id, total_units=units * models, data_identity=prepared.data.identity)


def _collect(job: ModelJob, outcomes: list, opened: OpenRun, state: RunState, ctx: DistContext) -> None:
    """Every worker's outcome for ``job`` (their units merged into the store), or its error raised."""
    outcomes = ctx.gather(outcomes[0]) if ctx.active else outcomes
    if ctx.active and ctx.is_main and opened.store is not None:  # every worker is done with this model
        for rank in range(1, ctx.world):
            opened.store.merge_from(opened.store.worker_path(rank), opened.stored_id)
    errors = [o.error for o in outcomes if o.error]
    if errors:
        kind, message = errors[0]
        raise {"ModelFailure": ModelFailure, "UserError": UserError, "StoreFull": StoreFull}.get(
            kind, AttackBoundsError
        )(message)
    state.absorb(job.name, outcomes)


def _finish(plan: RunPlan, opened: OpenRun, state: RunState, ctx: DistContext) -> EvalResult:
    """Records read back and the run's description; the run is marked finished (or failed, when a
    model stopped) and let go."""
    store = opened.store
    state.status = "failed" if state.failed_models else "finished"
    records, done = (
        (store.records(opened.stored_id), store.unit_counts(opened.stored_id))
        if store is not None
        else state.kept_records()
    )
    curves = store.curves(opened.stored_id) if store is not None else state.kept_curves()
    if records.empty and state.failed_models:
        if store is not None:
            store.release(opened.stored_id, status="failed")
        raise UserError(
            "no model could be evaluated: " + "; ".join(f"{m}: {e}" for m, e in state.failed_models.items())
        )
    run = describe_run(plan, opened.run_id, state, ctx.world)
    if store is not None and ctx.active:  # every worker's units are merged: drop their files
        for rank in range(1, ctx.world):
            for suffix in ("", "-wal", "-shm"):
                Path(f"{store.worker_path(rank)}{suffix}").unlink(missing_ok=True)
    if store is not None:
        store.release(
            opened.stored_id,
            status=state.status,
            finished=run["finished"],
            info=run,
            data_identity=state.data_info.get("identity"),
            total_units=state.total_units,
        )
    return EvalResult(records, pd.DataFrame(), run, done_units=done, curves=curves)

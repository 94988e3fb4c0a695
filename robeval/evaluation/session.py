"""A run being evaluated by this process (docs/layout.md): each finished unit is written at once (the
resume point); a model that fails is stopped alone.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..attacks.transfer import SourceModel
from ..core.defaults import CLEAN
from ..core.eps import Eps
from ..core.errors import StoreFull, UserError
from ..core.precision import slower_here
from ..core.records import Unit
from ..core.threads import FixedThreads, ThreadGovernor
from ..data.examples import EvalData
from ..models.names import registered_spec
from ..models.provenance import checkpoint_change, code_change
from ..options import identity_difference, newest_matching
from ..store import Store
from ..store.files import worker_store_path
from .attack_guards import ModelFailure
from .distributed import DistContext, announce_run
from .model_run import Batch, ModelRun
from .plan import Member, ModelJob, RunPlan
from .profiling import run_gflops
from .progress import Reporter, model_bars, unit_key
from .run_info import RunLog, describe_run
from .units import UnitRecords

UnitsOf = Callable[[Batch], Iterable[tuple[Eps, str]]]  # the (eps, unit) a batch runs, in order


def latest_matching_run(store: Store, identity: dict[str, Any]) -> str:
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


def refuse_changed_code(resume: str, plan: RunPlan, previous: dict[str, Any]) -> None:
    """One line when what the run loads is not what it started with: a model's code (a file of the user's
    or a file it imported, a plugin's version or layer) or a checkpoint's bytes (every member's, the
    transfer source's); its records so far were made by other code or other weights."""
    recorded = dict(previous.get("code") or {})
    for name, code in plan.models_code().items():
        changed = code_change(name, recorded.get(name) or previous.get("models", {}).get(name, {}).get("code"), code)
        if changed:
            raise UserError(f"--resume {resume}: {changed}; start a new run (its records so far are of the old code)")
    changed = checkpoint_change(recorded_checkpoints(previous), plan.loaded_checkpoints())
    if changed:
        raise UserError(f"--resume {resume}: {changed}; start a new run (its records so far are of the old weights)")


def recorded_checkpoints(previous: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The checkpoints a stored run loads, with their SHA-256: as it recorded them when it was created, else
    (a run that ended ``failed``, whose description replaced that record; a run stored before it was kept)
    as its models' facts name them: every member each model that began loaded."""
    if previous.get("checkpoints"):
        return dict(previous["checkpoints"])
    found = {}
    for name, facts in dict(previous.get("models") or {}).items():
        members = facts.get("members") or [facts]
        for k, member in enumerate(members):
            if member and member.get("checkpoint") and member.get("checkpoint_sha256"):
                who = name if len(members) == 1 else f"{name} member {k + 1}"
                found[who] = {"path": member["checkpoint"], "sha256": member["checkpoint_sha256"]}
    return found


def _open(plan: RunPlan, store: Store, resume: str | None, outline: dict[str, Any]) -> tuple[str, set, dict]:
    """The run created (with the code of its models and the SHA-256 of its checkpoints, which a resume
    compares), or ``resume`` checked and reopened: its id, the units it has stored, its stored
    description.  A resume is checked before anything is written (a worker's file merged, the run held)."""
    loaded = {
        key: value for key, value in (("code", plan.models_code()), ("checkpoints", plan.loaded_checkpoints())) if value
    }
    if resume is None:
        return store.create_run(plan.identity(), {"plan": outline, **loaded}, plan.config.protocol), set(), {}
    stored = store.run(resume)
    diff = identity_difference(stored["config"], plan.identity())
    if diff:
        raise UserError(f"--resume {resume}: the configuration differs from the stored run ({diff})")
    previous = stored["info"] or {}
    refuse_changed_code(resume, plan, previous)
    store.hold(resume)
    for path in store.worker_paths():  # units a killed worker left in its own file count as done
        store.merge_from(path, resume)
    store.update_run(resume, status="running", info={**previous, "plan": outline, **loaded})  # as compared
    return resume, store.done_units(resume), previous


@dataclass
class Session:
    """A run being evaluated by this process (module docstring): ``store`` is rank 0's or a worker's own
    file, ``done`` the units stored before, ``log`` what the run learns."""

    plan: RunPlan
    data: EvalData
    store: Store
    run_id: str
    done: set[Unit]
    log: RunLog
    reporter: Reporter
    ctx: DistContext
    source: SourceModel | None
    threads: ThreadGovernor | FixedThreads

    def begin_model(
        self, job: ModelJob, member: Member, log: RunLog, position: tuple[int, int]
    ) -> tuple[ModelRun, list[int]]:
        """Member ``member`` of model ``job`` loaded for this run (the model checks on the model's first
        batch, unless a resumed run has them already), and what the run learns of it before its batches (the
        model's facts, with each member's checkpoint; of a module it carries, the FLOPs per image, which a
        report in another process cannot count; the data; its units, for ``robeval runs``), its progress
        bars; returns it and the batches this process evaluates."""
        told = getattr(self.reporter, "partial", None)  # a reporter written before in-unit progress may lack it
        checks = self.ctx.is_main and job.name not in self.log.model_checks and job.name not in log.model_checks
        model = ModelRun(job, member, self.plan, self.data, self.done, log, self.source, told, checks)
        name, plan = job.name, self.plan
        log.models[name] = member_facts(model, log.models.get(name) or self.log.models.get(name))
        self.log.data = model.data.info()
        units = model.data.num_batches(model.batch_size) * len(plan.config.eps) * len(model.units)
        self.log.total_units += units
        if self.ctx.is_main:  # every model sees the same examples
            members = sum(len(job.members) for job in plan.jobs)
            self.store.update_run(self.run_id, total_units=units * members, data_identity=self.data.identity)
        pending = [b for b, units in model.todo.items() if units]
        mine = pending[self.ctx.rank :: self.ctx.world]
        share = sorted(set(model.todo) - set(pending)) + mine
        worker = f" (worker 1 of {self.ctx.world}: its share of the batches)" if self.ctx.active else ""
        several = f" member {member.index + 1} of {len(job.members)}" if len(job.members) > 1 else ""
        self.reporter.stop()  # the bars of the model's member before
        self.reporter.start(model_bars(model, share, self.done), name + several + worker, position)
        return model, mine

    def units(self, model: ModelRun, share: list[int], units_of: UnitsOf) -> Iterator[tuple[Batch, Eps, str, float]]:
        """The engine's one unit loop: each batch of ``share`` (after its clean pass) and each of its units
        ``units_of(batch)``, with the time it starts (the cores shared again before each).  A generator,
        so the unit it yields is made in the caller's frame (tests/test_frames.py counts them)."""
        for batch in model.batches(share):
            for eps, unit in units_of(batch):
                self.threads.look()  # the cores shared with other processes between units
                yield batch, eps, unit, time.perf_counter()

    def write(self, unit: UnitRecords, model: ModelRun, started: float | None = None) -> None:
        """A finished unit's records and curve into the store in one transaction, its time (from
        ``started`` on, when given) and progress told; a unit stored before (recomputed for ``--cascade``)
        is not written again."""
        if started is not None:
            unit.seconds += time.perf_counter() - started
        if unit.key in self.done:
            return
        curves = [] if unit.curve is None else [(unit.key, unit.curve)]
        self.store.write_units(self.run_id, [(unit.key, unit.seconds)], unit.records, curves)
        name, eps, attack, *_ = unit.key
        model.log.timings[f"{name}|{eps}|{attack}"] += unit.seconds
        if unit.attacked is not None:
            model.log.attacked[f"{name}|{eps}|{attack}"] += unit.attacked
        if attack != CLEAN:
            bar, images = unit_key(name, eps, attack, model.condition_names), len(unit.records["example"])
            self.reporter.advance(bar, images, unit.seconds)

    @contextmanager
    def model_stops_alone(self, job: ModelJob) -> Iterator[RunLog]:
        """A model's block; yields its share of what the run learns.  A model that fails (NaN logits, a
        failed attack) stops alone and the run goes on with the next.  In a distributed run each worker
        ends its share (a failure kept) before they gather, so that none waits on one that failed."""
        log, error = RunLog(), None
        try:
            yield log
        except (ModelFailure, UserError) as exc:
            if not self.ctx.active and not isinstance(exc, ModelFailure):
                raise
            error = exc
        finally:
            self.threads.restore()
        gathered = self.ctx.gather((log, error)) if self.ctx.active else [(log, error)]
        if self.ctx.active and self.ctx.is_main:  # every worker is done with this model: its units merged
            for rank in range(1, self.ctx.world):
                self.store.merge_from(worker_store_path(self.store.path, rank), self.run_id)
        for share, _ in gathered:
            self.log.absorb(share)
        self.reporter.stop()
        errors = [e for _, e in gathered if e is not None]
        if errors and not isinstance(errors[0], ModelFailure):
            raise errors[0]
        if errors:
            self.log.failed_models[job.name] = str(errors[0])
            self.reporter.note(f"warning: stopped model {job.name}: {errors[0]}")

    @contextmanager
    def stopping(self) -> Iterator[None]:
        """The run's block: Ctrl-C / SIGTERM / a full store leave it ``interrupted`` (resumable), any other
        error ``failed``; either way this process lets go of it (best effort: a full disk may refuse even
        that).  The source model's crafted images go with it."""
        try:
            yield
        except BaseException as exc:
            self.reporter.stop()
            resumable = isinstance(exc, (KeyboardInterrupt, StoreFull))
            if self.ctx.is_main:
                with contextlib.suppress(sqlite3.Error, UserError):  # else "running": a resume takes it over
                    self.store.release(self.run_id, status="interrupted" if resumable else "failed")
            if resumable:
                setattr(exc, "run_id", self.run_id)  # noqa: B010 - read back by the CLI's resume message
            raise
        finally:
            self.threads.restore()
            if self.source is not None:
                self.source.close()

    def finish(self) -> str:
        """The run described and let go of, ``finished`` (or ``failed`` when a model stopped); a worker's
        files merged before are removed.  Returns its id."""
        if not self.ctx.is_main:
            return self.run_id
        log = self.log
        log.status = "failed" if log.failed_models else "finished"
        if log.failed_models and not self.store.done_units(self.run_id):
            self.store.release(self.run_id, status="failed")
            raise UserError(
                "no model could be evaluated: " + "; ".join(f"{m}: {e}" for m, e in log.failed_models.items())
            )
        info = describe_run(self.plan, self.run_id, log, self.ctx.world)
        for rank in range(1, self.ctx.world):  # every worker's units are merged: their files go
            for suffix in ("", "-wal", "-shm"):
                Path(f"{worker_store_path(self.store.path, rank)}{suffix}").unlink(missing_ok=True)
        facts = {"finished": info["finished"], "info": info, "data_identity": log.data.get("identity")}
        self.store.release(self.run_id, status=log.status, total_units=log.total_units, **facts)
        return self.run_id


def member_facts(model: ModelRun, before: dict[str, Any] | None) -> dict[str, Any]:
    """A model's facts in run.json: its first member's, and where it has several, each member's
    checkpoint and SHA-256 (``members``); and what readers of the run would otherwise ask the registry
    (whose plugins and model sources import torch and code): its FLOPs per image, counted once here,
    whether it is a registration (``registered``) and, if so, its ``adaptive_options``."""
    meta = model.meta
    if model.member.index == 0 or "gflops_per_image" not in (before or {}):
        job = model.job
        spec = registered_spec(job.model) if job.given is None else None
        meta["gflops_per_image"] = run_gflops(model.model.net, model.model.meta.input_size, model.device,
                                              (job.model, job.options) if spec is not None else None)  # fmt: skip
        meta["registered"] = spec is not None
        meta.update({"adaptive_options": spec.adaptive} if spec is not None else {})
    if len(model.job.members) == 1:
        return meta
    members = list((before or {}).get("members") or [None] * len(model.job.members))
    members[model.member.index] = {key: meta.get(key) for key in ("checkpoint", "checkpoint_sha256", "recipe")}
    first = meta if model.member.index == 0 or not before else before
    return {**first, "members": members}


def start_session(
    plan: RunPlan, data: EvalData, store: Store, resume: str | None, reporter: Reporter, ctx: DistContext
) -> Session:
    """Create the run in ``store``, or check and reopen ``resume``; every worker learns the run's id
    from rank 0.  The run's outline is stored at once, so an interrupted run's tables can tell what it
    lacks."""
    outline = plan.outline(data.num_batches(plan.batch_size))
    opened: tuple[str, set, dict] | None = None
    error = None
    if ctx.is_main:
        try:
            opened = _open(plan, store, resume, outline)
        except UserError as exc:
            error = str(exc)
    opened, error = ctx.broadcast((opened, error))
    if error or opened is None:
        raise UserError(str(error))
    run_id, done, previous = opened
    if not ctx.is_main:
        store.ensure_run(run_id, plan.identity(), plan.config.protocol)
    announce_run(run_id, ctx)
    slow = slower_here(plan.precision, plan.device.type)
    if slow and ctx.is_main:
        reporter.note(slow)
    log = RunLog.resumed(previous)
    log.outline = outline
    threads = ThreadGovernor() if plan.config.threads is None and plan.device.type == "cpu" else FixedThreads()
    return Session(plan, data, store, run_id, done, log, reporter, ctx, load_source(plan), threads)


def load_source(plan: RunPlan) -> SourceModel | None:
    """The transfer attacks' source model (``--source-model NAME[=CHECKPOINT]``), loaded once per run;
    with ``--weights random`` a network seeded by the run's seed."""
    if plan.source is None:
        return None
    with torch.random.fork_rng():
        return SourceModel(plan.load(plan.source, plan.source.members[0]), str(plan.config.source_model))

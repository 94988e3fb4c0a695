"""The evaluation engine: models x batches x eps x attacks -> per-example records.

For each model and batch the clean pass runs once (under inference mode) and is shared by every
eps and attack; each attack then produces an adversarial batch that is verified against the threat
model before it is counted.  Records hold everything a table needs; summaries are computed from them.
The configuration lives in ``config.py``, the wrapping of each attack call in ``attack_calls.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
import platform
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any, Protocol as TypingProtocol

import pandas as pd
import torch
from torch import nn

from .. import __version__
from ..attacks import create, get_attack_spec
from ..errors import UserError
from ..models import load_model, set_elliptical_options
from ..profiling import cpu_peak_bytes
from ..store import worker_store_path
from .attack_calls import AttackBoundsError, Autocast, PassCounter, attack_with_halving, derive_seed, verify_adversarial
from .checks import all_flags, as_dicts, model_checks
from .config import AMP_DTYPES, EvalConfig, ModelJob, config_difference, model_jobs, semantic_config, validate_config
from .data import load_data
from .distributed import SINGLE, DistContext
from .metrics import RECORD_COLUMNS, perturbation_norms, summarize, topk_hits
from .protocols import get_protocol

__all__ = ["AttackBoundsError", "EvalConfig", "EvalResult", "ModelFailure", "NullReporter", "PassCounter", "Reporter",
           "run_evaluation", "verify_adversarial"]

MODEL_CHECK_EXAMPLES = 16  # randomness / softmax / gradient checks run on this many examples of the first batch


class Reporter(TypingProtocol):
    def start(self, tasks: list[tuple[str, str, str]], batches: int, examples: int) -> None: ...
    def advance(self, model: str, eps: str, attack: str, images: int) -> None: ...
    def note(self, text: str) -> None: ...
    def stop(self) -> None: ...


class NullReporter:
    def start(self, tasks, batches, examples) -> None:
        pass

    def advance(self, model, eps, attack, images) -> None:
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


def versions() -> dict[str, str]:
    import timm

    return {"robeval": __version__, "torch": torch.__version__, "timm": timm.__version__,
            "python": platform.python_version()}


def peak_memory_mb(device: torch.device) -> dict[str, float | None]:
    """Peak resident memory of this process and, on CUDA, peak memory allocated on the GPU."""
    cpu = cpu_peak_bytes()
    out: dict[str, float | None] = {"process_rss": None if cpu is None else round(cpu / 2 ** 20, 1)}
    if device.type == "cuda":
        out["gpu_allocated"] = round(torch.cuda.max_memory_allocated(device) / 2 ** 20, 1)
    return out


def _check_input(meta, x: torch.Tensor, data: str) -> None:
    expected = tuple(meta.input_size)
    if tuple(x.shape[1:]) != expected:
        raise UserError(f"model {meta.name} expects input {expected} but data {data!r} gives {tuple(x.shape[1:])}")


class _Records:
    """Columns of per-example records for one unit of work, appended batch-wise."""

    def __init__(self) -> None:
        self.columns: dict[str, list] = {c: [] for c in RECORD_COLUMNS}

    def add(self, **values: Any) -> None:
        n = len(values["example"])
        for column in RECORD_COLUMNS:
            value = values[column]
            self.columns[column].extend(value if isinstance(value, list) else [value] * n)

    def extend(self, other: "_Records") -> None:
        for column in RECORD_COLUMNS:
            self.columns[column].extend(other.columns[column])


class ModelFailure(Exception):
    """A model that cannot be evaluated (NaN/inf logits): it stops, the other models go on."""


def run_evaluation(config: EvalConfig, reporter: Reporter | None = None, store: Any = None,
                   resume: str | None = None, ctx: DistContext | None = None) -> EvalResult:
    """Evaluate every model of ``config`` on its data under every eps and attack.

    With a ``store`` (:class:`robeval.store.Store`) each finished unit (model, eps, attack, batch)
    is written as it completes and ``resume`` (a run id) skips the units already stored; the
    returned records are read back from the store.
    """
    reporter = reporter or NullReporter()
    validate_config(config)
    protocol = get_protocol(config.protocol)
    device = config.resolved_device()
    batch_size = config.resolved_batch_size()
    settings = {a: config.attack_settings(a) for a in config.attacks}
    semantic = semantic_config(config)
    jobs = model_jobs(config)
    started = time.time()

    ctx = ctx or SINGLE
    worker_store = None if ctx.is_main else store  # a worker's own file, merged into the store by rank 0
    if not ctx.is_main:
        store = None
    run_id, done, previous, error = None, set(), {}, None
    if store is not None:
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
    if worker_store is not None:
        worker_store.ensure_run(run_id, semantic, config.protocol)

    state = _RunState(previous)
    try:
        for job in jobs:
            try:
                _evaluate_job(job, config, protocol, device, batch_size, settings, store or worker_store, run_id, done,
                              state, reporter if ctx.is_main else NullReporter(), total_jobs=len(jobs), ctx=ctx)
            except ModelFailure as exc:
                reporter.stop()
                state.failed_models[job.name] = str(exc)
                reporter.note(f"warning: stopped model {job.name}: {exc}")
    except BaseException as exc:
        reporter.stop()
        if store is not None and run_id is not None:
            store.update_run(run_id, status="interrupted" if isinstance(exc, KeyboardInterrupt) else "failed")
        if isinstance(exc, KeyboardInterrupt) and run_id is not None:
            exc.run_id = run_id  # type: ignore[attr-defined]
        raise
    if not ctx.is_main:  # rank 0 reads the records back and writes the summary
        return EvalResult(pd.DataFrame(columns=RECORD_COLUMNS), pd.DataFrame(), {"run_id": run_id, "rank": ctx.rank})
    if len(state.failed_models) == len(jobs):
        if store is not None:
            store.update_run(run_id, status="failed")
        raise UserError("no model could be evaluated: " + "; ".join(f"{m}: {e}" for m, e in state.failed_models.items()))

    if store is not None:
        records = store.records(run_id)
    else:
        records = pd.DataFrame(state.memory.columns).sort_values(["model", "eps", "attack", "example"], kind="stable")
        records = records.reset_index(drop=True)
    records = records[~records["model"].isin(state.failed_models)].reset_index(drop=True)
    summary = summarize(records, config.attacks, state.models_meta, config.norm, [e.text for e in config.eps],
                        [job.name for job in jobs])
    summary.insert(len(summary.columns), "protocol", config.protocol)
    summary.insert(len(summary.columns), "data", state.data_info.get("data", config.data))
    summary.insert(len(summary.columns), "seed", config.seed)
    summary.insert(len(summary.columns), "settings",
                   [json.dumps(settings.get(a, {}), sort_keys=True) for a in summary["attack"]] if len(summary) else [])
    v = versions()
    summary.insert(len(summary.columns), "versions", f"robeval {v['robeval']}; torch {v['torch']}; timm {v['timm']}")
    flags = all_flags(summary, state.model_checks)
    run = {
        "run_id": run_id,
        "created": datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(time.time() - started, 3),
        "config": {**asdict(config), "eps": [{"text": e.text, "value": e.value} for e in config.eps]},
        "protocol": {"name": protocol.name, "description": protocol.description, "space": protocol.space,
                     "valid_threat_model": protocol.valid_threat_model,
                     "labels": {a: protocol.label_source(a) for a in config.attacks},
                     "box": {a: protocol.box(a) for a in config.attacks}},
        "attack_settings": settings,
        "attack_implementations": {a: get_attack_spec(a).implementation for a in config.attacks},
        "models": state.models_meta,
        "data": state.data_info,
        "skipped_files": sorted(state.skipped),
        "failed_models": state.failed_models,
        "oom_batch_splits": state.oom_splits,
        "model_checks": state.model_checks,
        "flags": as_dicts(flags),
        "device": str(device),
        "workers": ctx.world,
        "batch_size": batch_size,
        "seed": config.seed,
        "versions": versions(),
        "timings_seconds": {k: round(v, 4) for k, v in state.timings.items()},
        "peak_memory_MB": peak_memory_mb(device),
    }
    if store is not None and ctx.active:  # every worker's units are merged: drop their files
        for rank in range(1, ctx.world):
            for suffix in ("", "-wal", "-shm"):
                Path(f"{worker_store_path(store.path, rank)}{suffix}").unlink(missing_ok=True)
    if store is not None:
        store.update_run(run_id, status="finished", finished=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                         info=run, data_identity=state.data_info.get("identity"), total_units=state.total_units)
    return EvalResult(records, summary, run)


def _run_batch(job, config, protocol, device, model, target, counted, attacks, units, b, idx, x, y, state, outcome,
               checks_done, data, deliver_now) -> None:
    """Clean pass and every pending (eps, attack) unit of one batch; each finished unit goes to
    ``deliver_now`` at once (the store, a worker's own store file, or memory); ``outcome`` collects
    what rank 0 reports for the other workers (skipped files, checks, timings)."""
    readable = y >= 0
    if not readable.all():
        names = [data.dataset.path_of(int(i)) for i in idx[~readable]]
        if config.strict_data:
            raise UserError(f"unreadable image file {names[0]} (--strict-data)")
        outcome["skipped"].extend(names)
        state.skipped.update(names)
        idx, x, y = idx[readable], x[readable], y[readable]
        if len(y) == 0:
            return
    _check_input(model.meta, x, config.data)
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    if config.channels_last and x.dim() == 4:
        x = x.contiguous(memory_format=torch.channels_last)
    xa = x if protocol.space == "pixel" else model.normalize(x)
    clean_tick = time.perf_counter()
    with torch.inference_mode():
        clean_logits = target(xa)
    if not torch.isfinite(clean_logits).all():  # (also waits for the GPU, so the time below is real)
        raise ModelFailure(f"NaN or inf logits on clean images (batch {b}); check the checkpoint")
    clean_seconds = time.perf_counter() - clean_tick  # the shared clean pass: timed with the first clean unit
    if not checks_done[0]:
        outcome["checks"] = model_checks(target, xa[:MODEL_CHECK_EXAMPLES], y[:MODEL_CHECK_EXAMPLES])
        state.model_checks[job.name] = outcome["checks"]
        checks_done[0] = True
    clean1, clean5 = topk_hits(clean_logits, y)
    pred = clean_logits.argmax(1)
    n = len(y)
    base = dict(model=job.name, batch=b, example=idx.tolist(), label=y.tolist(), clean_top1=clean1.tolist(),
                clean_top5=clean5.tolist())
    for eps, attack in units:
        tick = time.perf_counter()
        unit = _Records()
        if attack == "clean":
            unit.add(**base, attack="clean", eps=eps.text, eps_value=eps.value, adv_top1=clean1.tolist(),
                     adv_top5=clean5.tolist(), adv_pred=pred.tolist(), linf=0.0, l2=0.0, forward_passes=1.0,
                     backward_passes=0.0)
        else:
            labels = pred if protocol.label_source(attack) == "predicted" else y
            counted.reset()
            x_adv = attack_with_halving(attacks[(eps.text, attack)], xa, labels,
                                        derive_seed(config.seed, attack, eps.text, b), state)
            verify_adversarial(attack, x_adv, xa, eps.value, config.norm, protocol.box(attack))
            fwd, bwd = counted.forward_images / n, counted.backward_images / n
            with torch.inference_mode():
                adv_logits = target(x_adv)
            if not torch.isfinite(adv_logits).all():
                raise ModelFailure(f"NaN or inf logits under {attack} (batch {b})")
            adv1, adv5 = topk_hits(adv_logits, y)
            linf, l2 = perturbation_norms(x_adv, xa)
            unit.add(**base, attack=attack, eps=eps.text, eps_value=eps.value, adv_top1=adv1.tolist(),
                     adv_top5=adv5.tolist(), adv_pred=adv_logits.argmax(1).tolist(), linf=linf.tolist(),
                     l2=l2.tolist(), forward_passes=fwd + 1.0, backward_passes=bwd)
        seconds = time.perf_counter() - tick
        if attack == "clean":
            seconds, clean_seconds = seconds + clean_seconds, 0.0
        key = f"{job.name}|{eps.text}|{attack}"
        state.timings[key] = state.timings.get(key, 0.0) + seconds
        outcome["timings"][key] = outcome["timings"].get(key, 0.0) + seconds
        deliver_now([((job.name, eps.text, attack, b), seconds, unit.columns, n)])


class _RunState:
    """What a run accumulates across models (merged with a resumed run's stored information)."""

    def __init__(self, previous: dict[str, Any]) -> None:
        self.memory = _Records()
        self.models_meta: dict[str, dict] = dict(previous.get("models", {}))
        self.model_checks: dict[str, dict] = dict(previous.get("model_checks", {}))
        self.timings: dict[str, float] = dict(previous.get("timings_seconds", {}))
        self.skipped: set[str] = set(previous.get("skipped_files", []))
        self.failed_models: dict[str, str] = {}
        self.oom_splits = 0
        self.data_info: dict[str, Any] = {}
        self.total_units = 0


def _evaluate_job(job: ModelJob, config: EvalConfig, protocol, device, batch_size: int, settings, store, run_id,
                  done, state: _RunState, reporter, total_jobs: int, ctx: DistContext = SINGLE) -> None:
    model = load_model(job.model, checkpoint=config.checkpoints.get(job.model), checkpoint_key=config.checkpoint_key,
                       trust_checkpoint=config.trust_checkpoint, device=device, **job.options)
    options = protocol.model_options.get(model.meta.family, {})
    if options:
        set_elliptical_options(model, **options)
        model.meta.options.update(options)
    meta = asdict(model.meta)
    meta["name"] = job.name
    state.models_meta[job.name] = meta
    data = load_data(config.data, model.meta, config.n_examples, config.subset)
    state.data_info = {"data": data.name, "identity": data.identity, "n": len(data.indices), "num_classes": data.num_classes}
    units = ["clean", *job.attacks]
    nb = data.num_batches(batch_size)
    state.total_units += nb * len(config.eps) * len(units)
    if store is not None:  # progress of `robeval runs`; every model sees the same examples
        store.update_run(run_id, total_units=nb * len(config.eps) * len(units) * total_jobs, data_identity=data.identity)
    todo = {b: [(e, a) for e in config.eps for a in units if (job.name, e.text, a, b) not in done] for b in range(nb)}
    if config.channels_last:
        model = model.to(memory_format=torch.channels_last)
    target: nn.Module = model if protocol.space == "pixel" else model.net
    if config.amp != "off":
        target = Autocast(target, AMP_DTYPES[config.amp], device.type)
    counted = PassCounter(target)
    attacks = {(e.text, a): create(a, counted, e.value, norm=config.norm, seed=config.seed, clip=protocol.box(a),
                                   **settings[a]) for e in config.eps for a in job.attacks}
    reporter.start([(job.name, e.text, a) for e in config.eps for a in job.attacks], nb, len(data.indices))
    for e in config.eps:
        for a in job.attacks:
            finished = sum(len(data.batch_indices(batch_size, b)) for b in range(nb) if (job.name, e.text, a, b) in done)
            if finished:
                reporter.advance(job.name, e.text, a, finished)
    pending = [b for b in range(nb) if todo[b]]
    mine = pending[ctx.rank::ctx.world]
    outcome: dict[str, Any] = {"skipped": [], "error": None, "checks": None, "timings": {}}
    batches = data.batches(batch_size, workers=config.workers, pin_memory=device.type == "cuda", only=mine)
    checks_done = [job.name in state.model_checks or not ctx.is_main]  # rank 0 checks its first batch

    def deliver(finished: list) -> None:
        for key, seconds, columns, n in finished:
            if store is not None:
                store.write_units(run_id, [(key, seconds)], columns)
            elif ctx.is_main:
                for c in RECORD_COLUMNS:
                    state.memory.columns[c].extend(columns[c])
            if key[2] != "clean":
                reporter.advance(key[0], key[1], key[2], n)

    failure = None
    for b, idx, x, y in batches:
        try:
            _run_batch(job, config, protocol, device, model, target, counted, attacks, todo[b], b, idx, x, y,
                       state, outcome, checks_done, data, deliver_now=deliver)
        except (ModelFailure, UserError, AttackBoundsError) as exc:
            if not ctx.active:
                raise
            failure = (type(exc).__name__, str(exc))
            break
    if ctx.active:  # every worker finished this model: share what rank 0 reports, then merge the files
        outcome["error"] = failure
        gathered = ctx.gather(outcome)
        errors = [o["error"] for o in gathered if o["error"]]
        if ctx.is_main and store is not None:
            for rank in range(1, ctx.world):
                store.merge_from(worker_store_path(store.path, rank), run_id)
        if errors:
            kind, message = errors[0]
            raise {"ModelFailure": ModelFailure, "UserError": UserError}.get(kind, AttackBoundsError)(message)
        for rank, o in enumerate(gathered):
            if rank == ctx.rank:
                continue  # already in this worker's state
            state.skipped.update(o["skipped"])
            if o["checks"] is not None:
                state.model_checks[job.name] = o["checks"]
            for k, v in o["timings"].items():
                state.timings[k] = state.timings.get(k, 0.0) + v
    reporter.stop()

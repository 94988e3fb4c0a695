"""What a run accumulates while it works, and the ``run.json`` description made from it."""

from __future__ import annotations

import platform
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

import torch

from .. import __version__
from ..attacks import ATTACKS
from ..core.machine import cpu_peak_bytes
from .plan import RunPlan
from .protocols import Protocol

CASCADE_RANDOMNESS = (
    "--cascade: AutoAttack's own draws, seeded by --seed and reset for every call as in AutoAttack(seed=...): "
    "each batch's robust examples equal those of AutoAttack's run_standard_evaluation on that batch "
    "(AutoAttack re-batches the examples still robust across the data set; robeval keeps its batches, "
    "so the two agree example by example where the data fits one batch); records depend on the batch size"
)


def versions() -> dict[str, str]:
    import timm

    return dict(robeval=__version__, torch=torch.__version__, timm=timm.__version__, python=platform.python_version())


def peak_memory_mb(device: torch.device) -> dict[str, float | None]:
    """Peak resident memory of this process and, on CUDA, peak memory allocated on the GPU."""
    cpu = cpu_peak_bytes()
    out: dict[str, float | None] = {"process_rss": None if cpu is None else round(cpu / 2**20, 1)}
    if device.type == "cuda":
        out["gpu_allocated"] = round(torch.cuda.max_memory_allocated(device) / 2**20, 1)
    return out


@dataclass
class RunLog:
    """What a run learns besides its records, as ``run.json`` tells it: each model's facts and checks,
    times per unit, the examples each ``--cascade`` attack attacked, files skipped, out-of-memory
    splits, models that stopped; and of the run, when it started, its outline, data and status.  A
    model's share is kept apart while it runs (each worker's, gathered by every worker) and absorbed."""

    models: dict[str, dict] = field(default_factory=dict)
    model_checks: dict[str, dict] = field(default_factory=dict)
    # model|eps|attack (|fp32-check) -> seconds, summed over the units and workers that add to it
    timings: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    attacked: Counter[str] = field(default_factory=Counter)  # --cascade: model|eps|attack -> examples attacked
    skipped: set[str] = field(default_factory=set)
    oom_splits: int = 0
    failed_models: dict[str, str] = field(default_factory=dict)
    started: float = 0.0
    outline: dict[str, Any] = field(default_factory=dict)  # what the run sets out to do (robeval runs)
    data: dict[str, Any] = field(default_factory=dict)
    total_units: int = 0
    status: str = "running"

    @classmethod
    def resumed(cls, previous: dict[str, Any]) -> RunLog:
        """A run's log continued from what its stored description says (nothing: a new run)."""
        return cls(
            dict(previous.get("models", {})),
            dict(previous.get("model_checks", {})),
            defaultdict(float, previous.get("timings_seconds", {})),
            Counter(previous.get("examples_attacked", {})),
            set(previous.get("skipped_files", [])),
            int(previous.get("oom_batch_splits", 0)),
            started=time.time(),
        )

    def absorb(self, other: RunLog) -> None:
        """A model's share (one worker's) into the run's."""
        self.models.update(other.models)
        self.model_checks.update(other.model_checks)
        for key, seconds in other.timings.items():
            self.timings[key] += seconds
        self.attacked.update(other.attacked)  # adds the counts
        self.skipped |= other.skipped
        self.oom_splits += other.oom_splits


def randomness(plan: RunPlan) -> dict[str, str]:
    """Where each attack's draws come from (AutoAttack's own where :meth:`RunPlan.library_draws`)."""
    attacks = plan.config.attacks
    return {a: CASCADE_RANDOMNESS if plan.library_draws(a) else ATTACKS.require(a).randomness for a in attacks}


def protocol_facts(protocol: Protocol, attacks: list[str]) -> dict[str, Any]:
    """The protocol in run.json: its name, space and threat model, each attack's labels and box, and an
    audited protocol's audit (stages and rate)."""
    facts = {
        "name": protocol.name,
        "description": protocol.description,
        "space": protocol.space,
        "valid_threat_model": protocol.valid_threat_model,
        "labels": {a: protocol.label_source(a) for a in attacks},
        "box": {a: protocol.box(a) for a in attacks},
    }
    if protocol.audit_stages:
        facts["audit"] = {"stages": list(protocol.audit_stages), "rate": protocol.audit_rate}
    return facts


def describe_run(plan: RunPlan, run_id: str, log: RunLog, workers: int) -> dict[str, Any]:
    """``run.json``: configuration, protocol, settings, models, data, what was skipped, timings, versions."""
    config, protocol = plan.config, plan.protocol
    eps = [{"text": e.text, "value": e.value} for e in config.eps]
    return {
        "run_id": run_id,
        "status": log.status,
        "plan": log.outline,
        "created": datetime.fromtimestamp(log.started, timezone.utc).isoformat(timespec="seconds"),
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(time.time() - log.started, 3),
        "config": {**asdict(config), "eps": eps, "checkpoints": config.stored_checkpoints()},
        "protocol": protocol_facts(protocol, config.attacks),
        "attack_settings": dict(config.settings),
        "attack_implementations": {a: ATTACKS.require(a).implementation for a in config.attacks},
        "randomness": randomness(plan),
        "shift": None if plan.shift is None else plan.shift.info(config),
        "models": log.models,
        "data": log.data,
        "skipped_files": sorted(log.skipped | set(log.data.get("passed_over", []))),
        "failed_models": log.failed_models,
        "oom_batch_splits": log.oom_splits,
        "model_checks": log.model_checks,
        "device": str(plan.device),
        "workers": workers,
        "threads": torch.get_num_threads(),
        "batch_size": plan.batch_size,
        "seed": config.seed,
        "versions": versions(),
        "timings_seconds": {k: round(v, 4) for k, v in log.timings.items()},
        "examples_attacked": log.attacked,  # --cascade: per model|eps|attack, the examples still robust before it
        "peak_memory_MB": peak_memory_mb(plan.device),
    }

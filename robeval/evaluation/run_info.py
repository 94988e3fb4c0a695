"""What a run accumulates while it works, and the ``run.json`` description made from it."""

from __future__ import annotations

import platform
import time
from dataclasses import asdict
from datetime import datetime, timezone
from typing import Any

import pandas as pd
import torch

from .. import __version__
from ..attacks import get_attack_spec
from ..defaults import RECORD_COLUMNS
from ..machine import cpu_peak_bytes
from .cascade import CASCADE_RANDOMNESS
from .plan import RunPlan
from .unit_records import CURVE_COLUMNS, Unit, UnitCurve, curve_rows


def versions() -> dict[str, str]:
    import timm

    return {
        "robeval": __version__,
        "torch": torch.__version__,
        "timm": timm.__version__,
        "python": platform.python_version(),
    }


def peak_memory_mb(device: torch.device) -> dict[str, float | None]:
    """Peak resident memory of this process and, on CUDA, peak memory allocated on the GPU."""
    cpu = cpu_peak_bytes()
    out: dict[str, float | None] = {"process_rss": None if cpu is None else round(cpu / 2**20, 1)}
    if device.type == "cuda":
        out["gpu_allocated"] = round(torch.cuda.max_memory_allocated(device) / 2**20, 1)
    return out


class RunState:
    """What a run accumulates across models (merged with a resumed run's stored information)."""

    def __init__(self, previous: dict[str, Any], started: float) -> None:
        self.started = started
        self.memory: dict[str, list] = {c: [] for c in RECORD_COLUMNS}  # records, when there is no store
        self.models_meta: dict[str, dict] = dict(previous.get("models", {}))
        self.model_checks: dict[str, dict] = dict(previous.get("model_checks", {}))
        self.timings: dict[str, float] = dict(previous.get("timings_seconds", {}))
        self.attacked: dict[str, int] = dict(previous.get("examples_attacked", {}))
        self.skipped: set[str] = set(previous.get("skipped_files", []))
        self.failed_models: dict[str, str] = {}
        self.oom_splits = int(previous.get("oom_batch_splits", 0))
        self.data_info: dict[str, Any] = {}
        self.total_units = 0
        self.plan: dict[str, Any] = {}
        self.status = "running"
        self.done_units: dict[tuple[str, str, str], int] = {}  # batches delivered (records kept in memory)
        self.curve_points: list[tuple] = []  # convergence curves, when there is no store

    def keep(self, unit: Unit, columns: dict[str, list], curve: UnitCurve | None = None) -> None:
        """A finished unit's records and curve, kept in memory (a run without a store)."""
        for c in RECORD_COLUMNS:
            self.memory[c].extend(columns[c])
        self.done_units[unit[:3]] = self.done_units.get(unit[:3], 0) + 1
        if curve is not None:
            self.curve_points += curve_rows(unit, curve)

    def kept_curves(self) -> pd.DataFrame:
        """The curves kept in memory, as the store gives them back."""
        frame = pd.DataFrame(self.curve_points, columns=CURVE_COLUMNS)
        return frame.sort_values(CURVE_COLUMNS[:5], kind="stable", ignore_index=True)

    def kept_records(self) -> tuple[pd.DataFrame, dict[tuple[str, str, str], int]]:
        """The records kept in memory, in the store's order, and the batches done per (model, eps, attack)."""
        records = pd.DataFrame(self.memory).sort_values(["model", "eps", "attack", "example"], kind="stable")
        return records.reset_index(drop=True), dict(self.done_units)

    def absorb(self, model: str, outcomes: list) -> None:
        """Every worker's :class:`~.model_run.BatchOutcome` for ``model``."""
        for outcome in outcomes:
            self.skipped.update(outcome.skipped)
            if outcome.checks is not None:
                self.model_checks[model] = outcome.checks
            for key, seconds in outcome.timings.items():
                self.timings[key] = self.timings.get(key, 0.0) + seconds
            for key, n in outcome.attacked.items():
                self.attacked[key] = self.attacked.get(key, 0) + n
            self.oom_splits += outcome.oom_splits


def randomness(config) -> dict[str, str]:
    """Where each attack's draws come from (AutoAttack's own under --cascade for its attacks)."""
    out = {a: get_attack_spec(a).randomness for a in config.attacks}
    if config.cascade:
        out.update(
            {a: CASCADE_RANDOMNESS for a in config.attacks if getattr(get_attack_spec(a).cls, "library_draws", False)}
        )
    return out


def describe_run(plan: RunPlan, run_id: str | None, state: RunState, workers: int) -> dict[str, Any]:
    """``run.json``: configuration, protocol, settings, models, data, what was skipped, timings, versions."""
    config, protocol = plan.config, plan.protocol
    return {
        "run_id": run_id,
        "status": state.status,
        "plan": state.plan,
        "created": datetime.fromtimestamp(state.started, timezone.utc).isoformat(timespec="seconds"),
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(time.time() - state.started, 3),
        "config": {**asdict(config), "eps": [{"text": e.text, "value": e.value} for e in config.eps]},
        "protocol": {
            "name": protocol.name,
            "description": protocol.description,
            "space": protocol.space,
            "valid_threat_model": protocol.valid_threat_model,
            "labels": {a: protocol.label_source(a) for a in config.attacks},
            "box": {a: protocol.box(a) for a in config.attacks},
        },
        "attack_settings": dict(plan.settings),
        "attack_implementations": {a: get_attack_spec(a).implementation for a in config.attacks},
        "randomness": randomness(config),
        "shift": None if plan.shift is None else plan.shift.info(config),
        "models": state.models_meta,
        "data": state.data_info,
        "skipped_files": sorted(state.skipped | set(state.data_info.get("passed_over", []))),
        "failed_models": state.failed_models,
        "oom_batch_splits": state.oom_splits,
        "model_checks": state.model_checks,
        "device": str(plan.device),
        "workers": workers,
        "threads": torch.get_num_threads(),
        "batch_size": plan.batch_size,
        "seed": config.seed,
        "versions": versions(),
        "timings_seconds": {k: round(v, 4) for k, v in state.timings.items()},
        "examples_attacked": state.attacked,  # --cascade: per model|eps|attack, the examples still robust before it
        "peak_memory_MB": peak_memory_mb(plan.device),
    }

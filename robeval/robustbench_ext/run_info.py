"""What a run accumulates while it works, the ``run.json`` description made from it, and the one
summary function every table reads (a finished run and a stored run give the same columns)."""

from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict
from datetime import datetime, timezone
from typing import Any

import pandas as pd
import torch

from .. import __version__
from ..attacks import get_attack_spec, list_attacks
from ..shifts.catalog import get_shift
from ..shifts.datasets import config_conditions
from ..profiling import cpu_peak_bytes
from .checks import all_flags, as_dicts
from .config import EvalConfig, model_order
from .metrics import RECORD_COLUMNS, Coverage, summarize
from .protocols import get_protocol

from ..defaults import RANDOM_WEIGHTS


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


class RunState:
    """What a run accumulates across models (merged with a resumed run's stored information)."""

    def __init__(self, previous: dict[str, Any], started: float) -> None:
        self.started = started
        self.memory: dict[str, list] = {c: [] for c in RECORD_COLUMNS}  # records, when there is no store
        self.models_meta: dict[str, dict] = dict(previous.get("models", {}))
        self.model_checks: dict[str, dict] = dict(previous.get("model_checks", {}))
        self.timings: dict[str, float] = dict(previous.get("timings_seconds", {}))
        self.skipped: set[str] = set(previous.get("skipped_files", []))
        self.failed_models: dict[str, str] = {}
        self.oom_splits = int(previous.get("oom_batch_splits", 0))
        self.data_info: dict[str, Any] = {}
        self.total_units = 0
        self.plan: dict[str, Any] = {}
        self.status = "running"
        self.done_units: dict[tuple[str, str, str], int] = {}  # batches delivered (records kept in memory)

    def absorb(self, model: str, outcomes: list) -> None:
        """Every worker's :class:`~.model_run.BatchOutcome` for ``model``."""
        for outcome in outcomes:
            self.skipped.update(outcome.skipped)
            if outcome.checks is not None:
                self.model_checks[model] = outcome.checks
            for key, seconds in outcome.timings.items():
                self.timings[key] = self.timings.get(key, 0.0) + seconds
            self.oom_splits += outcome.oom_splits

    def flags(self, summary: pd.DataFrame) -> list[dict[str, str]]:
        return as_dicts(all_flags(summary, self.model_checks))


def describe_run(config: EvalConfig, run_id: str | None, state: RunState, workers: int) -> dict[str, Any]:
    """``run.json``: configuration, protocol, settings, models, data, what was skipped, timings, versions."""
    protocol = get_protocol(config.protocol)
    device = config.resolved_device()
    return {
        "run_id": run_id,
        "status": state.status,
        "plan": state.plan,
        "created": datetime.fromtimestamp(state.started, timezone.utc).isoformat(timespec="seconds"),
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(time.time() - state.started, 3),
        "config": {**asdict(config), "eps": [{"text": e.text, "value": e.value} for e in config.eps]},
        "protocol": {"name": protocol.name, "description": protocol.description, "space": protocol.space,
                     "valid_threat_model": protocol.valid_threat_model,
                     "labels": {a: protocol.label_source(a) for a in config.attacks},
                     "box": {a: protocol.box(a) for a in config.attacks}},
        "attack_settings": {a: config.attack_settings(a) for a in config.attacks},
        "attack_implementations": {a: get_attack_spec(a).implementation for a in config.attacks},
        "randomness": {a: get_attack_spec(a).randomness for a in config.attacks},
        "shift": shift_info(config),
        "models": state.models_meta,
        "data": state.data_info,
        "skipped_files": sorted(state.skipped | set(state.data_info.get("passed_over", []))),
        "failed_models": state.failed_models,
        "oom_batch_splits": state.oom_splits,
        "model_checks": state.model_checks,
        "device": str(device),
        "workers": workers,
        "threads": torch.get_num_threads(),
        "batch_size": config.resolved_batch_size(),
        "seed": config.seed,
        "versions": versions(),
        "timings_seconds": {k: round(v, 4) for k, v in state.timings.items()},
        "peak_memory_MB": peak_memory_mb(device),
    }


def shift_info(config: EvalConfig) -> dict[str, Any] | None:
    """What run.json says of the shift: kind, conditions, and how corrupted images are made."""
    if config.shift is None:
        return None
    kind = get_shift(config.shift)
    info: dict[str, Any] = {"kind": kind.name, "description": kind.description}
    if kind.generated or kind.tree:
        info.update(corruptions=config.corruptions, severities=config.severities)
    if kind.generated:
        from importlib.metadata import version

        info["implementation"] = (f"imagecorruptions-imaug {version('imagecorruptions-imaug')}; "
                                  "one seed per (corruption, severity, example)")
    if kind.classes:
        info["classes"] = f"{kind.classes}: 200 ImageNet-1k classes, the other logits masked"
    return info


def run_summary(records: pd.DataFrame, run: dict[str, Any], config: dict[str, Any] | None = None,
                done_units: dict[tuple[str, str, str], int] | None = None) -> pd.DataFrame:
    """One row per model x attack x eps with the run's identity: the columns of results.csv and of
    every table, for a run that just finished and for one read back from the store alike.

    ``done_units`` (batches stored per model, eps and attack) against the run's plan marks rows that
    do not cover every batch, and the run's ``status`` marks every row of a run that did not finish."""
    config = config or run["config"]
    eps_order = [e if isinstance(e, str) else e["text"] for e in config["eps"]]
    eps_order = [e for e in eps_order if e in set(records["eps"])]
    models_meta = run.get("models", {})
    shifted = [c.name for c in config_conditions(config)]
    coverage = None if done_units is None else Coverage(done_units, run.get("plan", {}).get("batches"))
    summary = summarize(records, config["attacks"], models_meta, config["norm"], eps_order, model_order(config["models"]),
                        shifted, coverage)
    if summary.empty:
        return summary
    summary["run_status"] = run.get("status", "finished")
    summary["not_run"] = not_run(summary, run.get("plan", {}).get("units", {}))
    summary["checkpoint"] = [RANDOM_WEIGHTS if models_meta.get(m, {}).get("weights") == "random" else c
                             for m, c in zip(summary["model"], summary["checkpoint"])]
    settings = run.get("attack_settings") or config.get("attack_settings", {})
    v = run.get("versions") or {}
    summary["protocol"] = config["protocol"]
    summary["data"] = run.get("data", {}).get("data", config["data"])
    summary["seed"] = config["seed"]
    summary["settings"] = [json.dumps(settings.get(a, {}), sort_keys=True) for a in summary["attack"]]
    summary["versions"] = f"robeval {v['robeval']}; torch {v['torch']}; timm {v['timm']}" if v else ""
    summary["run_id"] = run.get("run_id")
    summary["shift"] = config.get("shift") or ""
    transfer = {spec.name for spec in list_attacks() if spec.kind == "transfer"}
    summary["source_model"] = [config.get("source_model") or "" if a in transfer else "" for a in summary["attack"]]
    return summary


def not_run(summary: pd.DataFrame, planned: dict[str, list[str]]) -> list[str]:
    """On each model's first row at each eps: the planned units with no row there (else empty)."""
    have = summary.groupby(["model", "eps"], sort=False)["attack"].agg(set).to_dict()
    out, seen = [], set()
    for model, eps in zip(summary["model"], summary["eps"]):
        first = (model, eps) not in seen
        seen.add((model, eps))
        missing = [u for u in planned.get(model, []) if u not in have[(model, eps)]] if first else []
        out.append(",".join(missing))
    return out


def run_plan(jobs: list, config: EvalConfig, batches: int) -> dict[str, Any]:
    """What the run sets out to do: every model's units at every eps, on ``batches`` batches each."""
    from .config import job_units

    return {"batches": batches, "units": {job.name: job_units(job, config) for job in jobs}}

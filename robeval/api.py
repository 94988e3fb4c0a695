"""``robeval.evaluate``: the library entry point behind ``robeval run``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from .attacks import parse_attack_list
from .eps import parse_eps_list
from .errors import UserError
from .models import expand_model_patterns
from .robustbench_ext.subsets import resolve_subset
from .robustbench_ext.config import config_difference, semantic_config
from .robustbench_ext.engine import EvalConfig, EvalResult, Reporter, run_evaluation

from .defaults import DEFAULT_EPS, DEFAULT_MODELS, DEFAULT_N_EXAMPLES  # noqa: F401  (part of the API)


def make_config(
    models: str | Iterable[str] | None = None,
    data: str = "digits",
    eps: str | Iterable[str] | float = DEFAULT_EPS,
    attacks: str | Iterable[str] | None = None,
    norm: str = "Linf",
    n_examples: int | None = None,
    checkpoints: dict[str, str] | None = None,
    settings: dict[str, dict[str, Any]] | None = None,
    workers: int | None = None,
    subset: str | None = None,
    subset_file: str | None = None,
    **fields: Any,
) -> EvalConfig:
    """An :class:`EvalConfig` from user-level values: the arguments here are parsed (names, eps,
    attacks, settings, subsets) or defaulted by data kind; every other keyword is an
    :class:`EvalConfig` field and passes through as it is (``seed``, ``protocol``, ``amp``, ...)."""
    names = [models] if isinstance(models, str) else list(models or DEFAULT_MODELS)
    if not names:
        raise UserError("no --model given")
    if n_examples is None and data == "digits":
        n_examples = DEFAULT_N_EXAMPLES
    if workers is None:  # image folders decode JPEGs: use worker processes; digits sit in memory
        workers = 0 if data == "digits" else min(8, os.cpu_count() or 1)
    if workers < 0:
        raise UserError(f"--workers must not be negative, got {workers}")
    if fields.get("weights", "default") not in ("default", "random"):
        raise UserError(f"invalid --weights {fields['weights']!r}: choose default or random")
    shift = fields.get("shift")
    if attacks is None:  # a shift run evaluates the shift alone unless attacks are asked for too
        from .robustbench_ext.protocols import get_protocol

        attacks = "none" if shift else (",".join(get_protocol(fields.get("protocol", "standard")).attacks) or "all")
    if shift is not None:
        from .shifts import get_shift, parse_corruptions, parse_severities

        if not get_shift(shift).classes:
            fields["corruptions"] = parse_corruptions(fields.get("corruptions"))
            fields["severities"] = parse_severities(fields.get("severities"))
    cfg = EvalConfig(models=expand_model_patterns(names), data=data, norm=norm, n_examples=n_examples,
                     eps=parse_eps_list(list(eps) if not isinstance(eps, (str, int, float)) else eps, norm),
                     attacks=parse_attack_list(attacks if attacks is None or isinstance(attacks, str) else list(attacks)),
                     checkpoints=dict(checkpoints or {}), set_options={k: dict(v) for k, v in (settings or {}).items()},
                     workers=workers, subset=resolve_subset(subset, subset_file), **fields)
    for attack in cfg.set_options:  # settings of attacks not run are validated, then ignored
        cfg.attack_settings(attack)
    return cfg


def evaluate_full(reporter: Reporter | None = None, out: str | Path | None = None, store: str | Path | Any = None,
                  resume: str | None = None, ctx: Any = None, **kwargs: Any) -> EvalResult:
    """Like :func:`evaluate` but returns records, summary and run information; writes files to ``out``.

    ``store``: a results-store path (or :class:`robeval.store.Store`) that receives every finished
    unit; ``resume``: a run id in that store to continue ("latest" = the newest unfinished run with
    the same configuration).
    """
    from .store import Store

    config = make_config(**kwargs)
    if config.threads is not None:
        from .threads import set_threads

        set_threads(config.threads)
    is_main = ctx is None or ctx.is_main
    if store is not None and not is_main:  # each worker writes its own file; rank 0 merges them
        from .store import worker_store_path

        store = Store(worker_store_path(store.path if isinstance(store, Store) else store, ctx.rank))
    db = store if isinstance(store, Store) or store is None else Store(store)
    if resume is not None and db is None and is_main:
        raise UserError("resume needs a results store")
    if resume == "latest" and is_main:
        resume = latest_matching_run(db, config)
    result = run_evaluation(config, reporter, store=db, resume=resume, ctx=ctx)
    if out is not None and is_main:
        from .report.files import write_run_files

        write_run_files(result, Path(out))
    return result


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


LARGE_EPS_CHECK = ("pgd", ("16/255", "64/255"))  # the run behind "accuracy reaches 0 at a large eps"


def large_eps_run(store: Any, stored_config: dict[str, Any], reporter: Reporter | None = None) -> EvalResult | None:
    """PGD at 16/255 and 64/255 on the models, data and examples of a stored run (its configuration as
    the store keeps it), written to ``store`` as a run of its own; None when the run already has them.
    Shifts, transfer sources, adaptive copies and attack settings of the stored run are not carried over."""
    from dataclasses import fields

    attack, wanted = LARGE_EPS_CHECK
    have = set(stored_config["eps"]) if attack in stored_config["attacks"] else set()
    missing = [e for e in wanted if e not in have]
    if not missing:
        return None
    dropped = {"eps", "attacks", "shift", "corruptions", "severities", "source_model", "adaptive", "set_options"}
    kept = {f.name: stored_config[f.name] for f in fields(EvalConfig)
            if f.metadata.get("identity", True) and f.name not in dropped and f.name in stored_config}
    config = EvalConfig(eps=parse_eps_list(",".join(missing), stored_config["norm"]), attacks=[attack], **kept)
    return run_evaluation(config, reporter, store=store)


def evaluate(**kwargs: Any) -> pd.DataFrame:
    """Evaluate models under the attack suite; returns the results table (one row per model x attack x eps).

    Keywords: ``models``, ``data`` ("digits" or an ImageNet-style folder), ``eps`` ("3/255", "0.01",
    "1/255,2/255" or a list), ``attacks`` ("all" or a comma list), ``protocol`` ("standard" or
    "nielsen2024"), ``norm``, ``n_examples``, ``checkpoints`` ({model: path}), ``checkpoint_key``,
    ``settings`` ({"pgd": {"steps": 50}}), ``seed``, ``batch_size``, ``device``, ``out`` (a folder for
    results.csv / results.md / run.json), ``store`` / ``resume`` (results store), ``strict_data``
    (unreadable image files are an error instead of skipped), ``trust_checkpoint`` (allow full
    unpickling), ``adaptive`` (models with a data-dependent attention weight again with gradients
    through it), ``amp`` ("off", "bf16", "fp16": autocast), ``channels_last``, ``workers`` (DataLoader
    processes; None = automatic), ``class_map`` (a file naming the model class of each image folder),
    ``weights`` ("default" or "random": untrained networks, marked in every table), ``threads`` (CPU
    threads of this process), ``shift`` ("corruptions", "imagenet-c", "imagenet-a", "imagenet-r")
    with ``corruptions`` / ``severities`` (lists or comma text; default the 15 at 1-5).
    """
    return evaluate_full(**kwargs).summary

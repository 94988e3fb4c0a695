"""``robeval.evaluate``: the library entry point behind ``robeval run``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from .attacks import parse_attack_list
from .eps import parse_eps_list
from .errors import UserError
from .seeds import check_seed
from .models import expand_model_patterns
from .robustbench_ext.subsets import resolve_subset
from .robustbench_ext.distributed import SINGLE
from .robustbench_ext.engine import EvalConfig, EvalResult, Reporter, execute_run, prepare_run, run_evaluation

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
    check_seed(cfg.seed)
    for attack in dict.fromkeys([*cfg.attacks, *cfg.set_options]):  # a settings dict may cover attacks not run
        cfg.attack_settings(attack)
    return cfg


def evaluate_full(reporter: Reporter | None = None, out: str | Path | None = None, store: str | Path | Any = None,
                  resume: str | None = None, ctx: Any = None, **kwargs: Any) -> EvalResult:
    """Like :func:`evaluate` but returns records, summary and run information; writes files to ``out``
    (a folder; ``{run_id}`` in it stands for the new run's id, as in the CLI's ``results/{run_id}``).

    ``store``: a results-store path (or :class:`robeval.store.Store`) that receives every finished
    unit, opened only once everything else is checked; ``resume``: a run id in that store to continue
    ("latest" = the newest unfinished run with the same configuration).
    """
    config = make_config(**kwargs)
    if config.threads is not None:
        from .threads import set_threads

        set_threads(config.threads)
    ctx = ctx or SINGLE
    prepared = prepare_run(config, store, resume, ctx)
    if out is not None and ctx.is_main:  # before any work: writable, and another run's files are never overwritten
        from .report.files import check_out_dir, prepare_out_dir

        template, _, _ = str(out).partition(RUN_ID_FIELD)
        check_out_dir(Path(out), prepared.resume) if template == str(out) else prepare_out_dir(Path(template or "."))
    result = execute_run(prepared, reporter, ctx)
    if out is not None and ctx.is_main:
        from .report.files import write_run_files

        result.files = write_run_files(result, Path(str(out).replace(RUN_ID_FIELD, str(result.run["run_id"]))))
    return result


RUN_ID_FIELD = "{run_id}"  # in an ``out`` path: the run's id, known once the run is created
LARGE_EPS_CHECK = ("pgd", ("16/255", "64/255"))  # the run behind "accuracy reaches 0 at a large eps"


def large_eps_run(store: Any, run_id: str, stored_config: dict[str, Any], reporter: Reporter | None = None) -> EvalResult | None:
    """PGD at 16/255 and 64/255 on the models, data and examples of stored run ``run_id`` (its
    configuration as the store keeps it), written to ``store`` as a run of its own that names it
    (``evidence_for``: tables of ``run_id`` take it in); None when the run already has them.
    Shifts, transfer sources, adaptive copies and attack settings of the stored run are not carried over."""
    from dataclasses import fields

    attack, wanted = LARGE_EPS_CHECK
    have = set(stored_config["eps"]) if attack in stored_config["attacks"] else set()
    missing = [e for e in wanted if e not in have]
    if not missing:
        return None
    dropped = {"eps", "attacks", "shift", "corruptions", "severities", "source_model", "adaptive", "set_options",
               "evidence_for"}
    kept = {f.name: stored_config[f.name] for f in fields(EvalConfig)
            if f.metadata.get("identity", True) and f.name not in dropped and f.name in stored_config}
    config = EvalConfig(eps=parse_eps_list(",".join(missing), stored_config["norm"]), attacks=[attack],
                        evidence_for=run_id, **kept)
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

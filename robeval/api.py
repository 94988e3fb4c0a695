"""The library's entry points around the engine; see docs/python.md and docs/layout.md."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from . import robustbench_ext  # noqa: F401  (registers the robustbench: model names)
from .core.atomic_files import nearest_folder
from .core.defaults import DEFAULT_EPS, DEFAULT_MODELS, DEFAULT_N_EXAMPLES, RUN_ID_FIELD  # noqa: F401  (part of the API)
from .core.errors import UserError
from .evaluation.config import make_config, remake
from .evaluation.distributed import DistContext, init_from_env, shutdown
from .evaluation.engine import evaluate_plan
from .evaluation.plan import make_plan, planned_identity
from .evaluation.preflight import preflight
from .evaluation.progress import Reporter
from .evaluation.session import latest_matching_run
from .model_config import ModelConfig  # noqa: F401  (robeval.ModelConfig: what a model of your code states)
from .models import load_model, split_models  # noqa: F401  (robeval.load_model)
from .models.given import GivenModel
from .models.user_code import check_stored_code
from .options import EvalConfig, newest_matching, option_default
from .references import split_label
from .results.runs import load_run
from .results_api import Run
from .store import IN_MEMORY, Store, StoredRun, existing_store
from .store.files import check_writable_store, worker_store_path


def evaluate_run(
    config: EvalConfig,
    given: dict[str, list[GivenModel]] | None = None,
    *,
    out: str | Path | None = None,
    store: str | Path | Store | None = None,
    resume: str | None = None,
    progress: bool = False,
    reporter: Reporter | None = None,
    ctx: DistContext | None = None,
) -> Run:
    """The engine's one entry (docs/python.md, section Evaluate): evaluate ``config`` (made once by
    the caller) and return the run.  ``given``: the modules given from Python, by model name.
    ``resume="latest"``: the newest unfinished run with the same configuration; ``ctx``: default
    joined from torchrun's environment, and left at the end."""
    if config.threads is not None:  # judged by make_config already
        torch.set_num_threads(config.threads)
    if isinstance(store, (str, Path)) and str(store) != IN_MEMORY:
        check_writable_store(Path(store))  # before any work: a store it cannot write is refused now
    if resume is not None and store is None:
        raise UserError("resume needs a results store")
    joined, ctx = ctx is None, ctx or init_from_env(config.device)
    if reporter is None and progress and ctx.is_main:
        from .report.terminal import RichReporter

        reporter = RichReporter()
    try:
        plan = make_plan(config, given or {})
        examples = preflight(plan)  # what a user can get wrong, checked before a run exists (a typo leaves none)
        with _store(store, ctx) as db:
            if resume == "latest" and ctx.is_main:  # the newest unfinished run in the store with this configuration
                resume = latest_matching_run(db, plan.identity())
            if out is not None and ctx.is_main:
                _check_out(out, resume)
            run_id = evaluate_plan(plan, examples, db, resume, reporter or Reporter(), ctx)
            run = _finished(db, store, run_id, ctx, plan.identity())
    finally:
        if joined:
            shutdown(ctx)
    if out is not None and ctx.is_main:
        from .report.files import write_run_files

        run.files = write_run_files(run, Path(str(out).replace(RUN_ID_FIELD, run.run_id)))
    return run


def _run_keywords() -> list[inspect.Parameter]:
    """:func:`evaluate_run`'s own keywords (where and how a run is made): declared there alone."""
    return [p for p in inspect.signature(evaluate_run).parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]


def evaluate(**keywords: Any) -> Run:
    """Evaluate models under attacks (and/or a distribution shift) and return the run; every keyword but
    :func:`evaluate_run`'s own is a field of :class:`robeval.options.EvalConfig` (docs/python.md, section
    Evaluate)."""
    where = {p.name: keywords.pop(p.name) for p in _run_keywords() if p.name in keywords}
    names, given = split_models(keywords.pop("models", None))
    return evaluate_run(make_config(**keywords, models=names), given, **where)


def _signature_from_options() -> inspect.Signature:
    """:func:`evaluate`'s signature, for ``help()`` and editors: :class:`EvalConfig`'s fields, then
    :func:`evaluate_run`'s keywords."""
    options = [
        inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=option_default(f.name), annotation=f.type)
        for f in fields(EvalConfig)
    ]
    return inspect.Signature([*options, *_run_keywords()], return_annotation=Run)


evaluate.__signature__ = _signature_from_options()  # type: ignore[attr-defined]
evaluate_full = evaluate  # the name docs/python.md promised before evaluate returned the run


@contextmanager
def _store(store: str | Path | Store | None, ctx: DistContext) -> Iterator[Store]:
    """The store a run writes to: the one given, the one at a path (closed after the run: its journal
    folded into the file; a worker of a distributed run gets its own file next to it, which rank 0
    merges), or one in memory, which the returned run keeps."""
    if isinstance(store, Store) and ctx.is_main:
        yield store
        return
    if store is None:
        if ctx.active:
            raise UserError("a run with several workers needs a results store (store=PATH): each writes its own file")
        yield Store(IN_MEMORY)
        return
    path = store.path if isinstance(store, Store) else Path(store)
    opened = Store(path if ctx.is_main else worker_store_path(path, ctx.rank))
    try:
        yield opened
    finally:
        opened.close()


def _finished(db: Store, store: Any, run_id: str, ctx: DistContext, identity: dict[str, Any]) -> Run:
    """The run as its store holds it: the run :func:`~robeval.results_api.open_run` would read back (the
    tables of a run kept in memory name no run id: no store holds it, robeval.report.naming.run_label).  A
    worker of a distributed run returns its rank and no records (rank 0 reads them back)."""
    where = db if store is None or isinstance(store, Store) else Path(store)
    if ctx.is_main:
        stored = load_run(db, run_id, empty_ok=True)
        if str(db.path) == IN_MEMORY and "run_id" in stored.summary:
            stored.summary["run_id"] = None
        return Run(where, [stored])
    empty = pd.DataFrame()
    return Run(where, [StoredRun(run_id, {"run_id": run_id, "rank": ctx.rank}, identity, empty, empty, "running")])


LARGE_EPS_CHECK = ("pgd", ("16/255", "64/255"))  # the run behind "accuracy reaches 0 at a large eps"
NOT_CARRIED = ("shift", "corruptions", "severities", "source_model", "adaptive", "settings")  # by the large-eps run


def large_eps_run(run: Run, progress: bool = False, code: Sequence[str] = ()) -> Run | None:
    """``check --run-missing``: ``LARGE_EPS_CHECK`` on the models, data and examples of ``run``, stored
    beside it as a run that names it (``evidence_for``); None when the run already has them.  ``code``:
    ``PATH.py:CALLABLE=NAME``, the only user code imported."""
    stored = run.runs[0]
    check_stored_code(stored.config, [split_label(item)[0] for item in code])  # only code named here
    attack, wanted = LARGE_EPS_CHECK
    have = set(stored.config["eps"]) if attack in stored.config["attacks"] else set()
    missing = [e for e in wanted if e not in have]
    with existing_store(run.store, writable=True) as db:  # the evidence run is stored beside the run
        if not missing:
            return None
        reset = {name: option_default(name) for name in NOT_CARRIED}
        config = remake(
            EvalConfig.from_identity(stored.config), **reset, eps=missing, attacks=[attack], evidence_for=stored.run_id
        )
        return evaluate_run(config, store=db, progress=progress)


def _check_out(out: str | Path, resume: str | None) -> None:
    """Before any work: ``out`` writable, and no other run's files there to overwrite.  With ``{run_id}``
    in it, the nearest folder above it that exists is checked and nothing is made (a failing run leaves
    no empty folder behind)."""
    from .report.files import check_out_dir, prepare_out_dir

    if RUN_ID_FIELD not in str(out):
        check_out_dir(Path(out), resume)
        return
    parts = Path(out).parts
    prepare_out_dir(nearest_folder(Path(*parts[: next(i for i, part in enumerate(parts) if RUN_ID_FIELD in part)])))


def reproduce(name: str, **options: Any):
    """``robeval reproduce NAME``: a paper table run (:func:`robeval.reproduce.run.reproduce`) with this
    module's :func:`evaluate` for its attack tables."""
    from .reproduce.run import reproduce as reproduce_table

    return reproduce_table(name, evaluate=evaluate, **options)


def benchmark(
    model: Any,
    n_examples: int = 10000,
    dataset: Any = "cifar10",
    threat_model: Any = "Linf",
    to_disk: bool = False,
    model_name: str | None = None,
    data_dir: str = "./data",
    corruptions_data_dir: str | None = None,
    device: Any = None,
    batch_size: int = 32,
    eps: float | str | None = None,
    log_path: str | None = None,
    preprocessing: Any = None,
    aa_state_path: str | Path | None = None,
    *,
    version: str = "standard",
    **options: Any,
) -> tuple[float, float]:
    """RobustBench's ``benchmark()`` (robustbench 1.1.1's parameters, return value and printed lines) on
    robeval's engine; see docs/robustbench.md."""
    from .evaluation.protocols import autoattack_options, autoattack_version
    from .robustbench_ext.benchmark_run import (
        BenchmarkArgs,
        accuracies,
        evaluate_module,
        model_info_path,
        print_accuracies,
    )

    args = BenchmarkArgs(
        n_examples, dataset, threat_model, model_name, data_dir, corruptions_data_dir, device, batch_size, eps,
        version, preprocessing, aa_state_path,
    )  # fmt: skip
    as_version = autoattack_options(version)
    standard = autoattack_version("standard").autoattack_version_attacks()
    path = model_info_path(args, options, standard) if to_disk else None  # checked before the run
    run = evaluate if aa_state_path is None else _resuming(aa_state_path, options)
    result, name = evaluate_module(model, args, run, options, as_version)
    clean, robust = accuracies(result.records, list(result.config["attacks"]), name)
    if result.runs[0].info.get("rank", 0) == 0:  # a worker of a torchrun launch leaves the files to rank 0
        _benchmark_files(result, name, path, log_path)
        print_accuracies(clean, robust)
    return clean, robust


def _resuming(store: str | Path, options: dict[str, Any]) -> Callable[..., Run]:
    """``evaluate`` continuing the newest unfinished run in ``store`` with the same configuration, else
    starting one."""
    if "store" in options or "resume" in options:
        raise TypeError("benchmark() takes aa_state_path or store/resume, not both")

    def run(**run_options: Any) -> Run:
        resume = None
        if Path(store).exists():
            identity = planned_identity(run_options)
            with existing_store(store) as db:
                resume = newest_matching(db.unfinished_runs(), identity)
        return evaluate(store=store, resume=resume, **run_options)

    return run


def _benchmark_files(result: Run, name: str, info_path: Path | None, log_path: str | None) -> None:
    """benchmark()'s ``to_disk`` model-info file and its ``log_path`` log (the run's table, appended)."""
    if info_path is not None:
        from .core.atomic_files import atomic_write
        from .report.robustbench import updated_model_info

        info_path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(info_path, updated_model_info(info_path, result.summary[result.summary["model"] == name]))
    if log_path is not None:
        from .report.naming import run_label
        from .report.paper import render

        with open(log_path, "a", encoding="utf-8") as log:
            table = render(result.summary, "md", records=result.records)
            log.write(f"{run_label(result.summary['run_id'].iloc[0])} ({name})\n\n{table}\n")

"""``robeval.evaluate``: the library entry point behind ``robeval run``, and the one place that
builds what a run needs around the engine: the results store (in memory when none is named), the
progress display, the distributed context.  It returns the run as :func:`robeval.open_run` reads it
back (:class:`robeval.results_api.Run`: records, summary, table, compare, plot, check, report), and
writes the run's files.  ``benchmark`` is RobustBench's ``benchmark()`` on the same engine.
"""

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
    """Evaluate a run's configuration (:func:`robeval.evaluation.config.make_config`'s, made once by the
    caller: ``robeval run`` and :func:`evaluate` alike) and return the run, the same
    :class:`~robeval.results_api.Run` that :func:`robeval.open_run` reads back.  ``given``: the modules
    given from Python, by model name (:func:`robeval.models.split_models`).

    ``out``: a folder for results.csv, results.md and run.json (``{run_id}`` in it stands for the new
    run's id); ``store``: a results-store path (or :class:`~robeval.store.Store`) that receives
    every finished unit, opened once everything else is checked (none: a store in memory, kept by the
    returned run); ``resume``: a run id in that store to continue ("latest": the newest unfinished run
    with the same configuration); ``progress``: progress bars (or your own ``reporter``); ``ctx``: the
    distributed context (default: joined from torchrun's environment, and left at the end)."""
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
    """Evaluate models under attacks (and/or a distribution shift); returns the run (:func:`evaluate_run`),
    whose ``summary`` is the results table (one row per model x attack x eps).

    Every keyword but :func:`evaluate_run`'s own (``out``, ``store``, ``resume``, ``progress``, ``reporter``,
    ``ctx``) is a run option, a field of :class:`robeval.options.EvalConfig` with its help there (the
    signature lists them all, built from those declarations), in the form a user gives it
    (``eps="1/255,2/255"``, ``attacks="pgd,fgsm"``, ``settings={"pgd": {"steps": 50}}`` or
    ``["pgd.steps=50"]``); absent: the option's default.  ``models`` takes names, ``PATH.py:CALLABLE`` /
    ``PKG.MODULE:CALLABLE`` strings and ``nn.Module`` s (or ``(module, robeval.ModelConfig(...))`` pairs)
    in one list."""
    where = {p.name: keywords.pop(p.name) for p in _run_keywords() if p.name in keywords}
    names, given = split_models(keywords.pop("models", None))
    return evaluate_run(make_config(**keywords, models=names), given, **where)


def _signature_from_options() -> inspect.Signature:
    """:func:`evaluate`'s signature: every run option spelled out from :class:`EvalConfig`'s
    declarations (its fields and their defaults), then :func:`evaluate_run`'s keywords: what ``help()``
    and an editor show, declared nowhere else."""
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
    """``check --run-missing``: PGD at 16/255 and 64/255 on the models, data and examples of ``run`` (its
    configuration read back from its stored identity: :meth:`robeval.options.EvalConfig.from_identity`),
    written to its store as a run of its own that names it (``evidence_for``: tables of ``run`` take it
    in); None when the run already has them.  Shifts, transfer sources, adaptive copies and attack settings
    of the stored run are not carried over.  ``code``: the user's code, ``PATH.py:CALLABLE=NAME``, that
    builds a model of the run (only code named here is imported); ``progress``: its progress bars."""
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
    """RobustBench's ``benchmark()`` on robeval's engine (``from robeval import benchmark``): the same
    parameters in the same order as robustbench 1.1.1's, the same return value, ``(clean_accuracy,
    robust_accuracy)`` as fractions, and the same two lines printed (``Clean accuracy: 87.50%``,
    ``Adversarial accuracy: 56.29%``), from AutoAttack's ``version`` (keyword-only, robeval's own, as are
    ``options``) run as AutoAttack runs it (``cascade=True``) on RobustBench's examples.  What it refuses
    raises :class:`~robeval.errors.UserError`, a ``ValueError`` as RobustBench's refusals are.

    ``model``: an ``nn.Module`` taking [0,1] images (normalisation inside), evaluated as a copy named
    ``module:<model_name>@<hash of its state dict>``.  ``aa_state_path``: a results store through which
    the run resumes (the newest unfinished run there with this configuration); ``to_disk``: RobustBench's
    ``model_info/<dataset>/<threat model>/<model_name>.json``; ``log_path``: the results table is appended
    there.  ``options``: any keyword of :func:`evaluate` (``settings``, ``seed``, ``precision``,
    ``store``, ``resume``, ``out``, ``progress``, ...); see README: RobustBench."""
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
    """``evaluate`` on the store at ``store`` (RobustBench's ``aa_state_path``), continuing the newest
    unfinished run there with the same configuration, else starting one."""
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

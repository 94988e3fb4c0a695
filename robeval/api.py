"""``robeval.evaluate``: the library entry point behind ``robeval run``, and the one place that builds
what a run needs around the engine: the results store, the progress display, the distributed
context; it resolves the plan once, runs it, summarises the records and writes the run files.

Every keyword of :func:`evaluate` / :func:`evaluate_full` other than ``out``, ``store``, ``resume``,
``progress``, ``reporter`` and ``ctx`` is a run option: a field of :class:`robeval.options.EvalConfig`,
with its help text there (``models``, ``eps``, ``attacks``, ``settings``, ``protocol``, ...).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from . import robustbench_ext  # noqa: F401  (registers the robustbench: model names)
from .defaults import DEFAULT_EPS, DEFAULT_MODELS, DEFAULT_N_EXAMPLES  # noqa: F401  (part of the API)
from .evaluation.config import make_config, remake
from .evaluation.distributed import SINGLE, DistContext, init_from_env, shutdown
from .evaluation.engine import EvalResult, execute_run, prepare_run
from .evaluation.plan import planned_identity
from .evaluation.progress import NullReporter, Reporter
from .model_config import ModelConfig  # noqa: F401  (robeval.ModelConfig: what a model of your code states)
from .models import (
    GivenModel,
    load_model,  # noqa: F401  (robeval.load_model)
    split_models,
)
from .options import EvalConfig, newest_matching, option_default
from .results.soundness import run_flags
from .results.store import Store, existing_store, worker_store_path
from .results.summary import passes_per_image, run_summary

RUN_ID_FIELD = "{run_id}"  # in an ``out`` path: the run's id, known once the run is created
LARGE_EPS_CHECK = ("pgd", ("16/255", "64/255"))  # the run behind "accuracy reaches 0 at a large eps"


def open_store(store: str | Path | Store | None, ctx: DistContext) -> Store | None:
    """The store for a path (or a Store, or None); a worker of a distributed run gets its own file next
    to it, which rank 0 merges."""
    if store is None:
        return None
    path = store.path if isinstance(store, Store) else Path(store)
    if not ctx.is_main:
        return Store(worker_store_path(path, ctx.rank))
    return store if isinstance(store, Store) else Store(path)


def summarise(result: EvalResult) -> EvalResult:
    """The summary every table reads, the soundness flags and the passes per image, from the records the
    run stored."""
    if not result.records.empty or result.run.get("models"):
        result.summary = run_summary(result.records, result.run, done_units=result.done_units, curves=result.curves)
        result.run["flags"] = run_flags(result.summary, result.run, result.records)
        result.run["passes_per_image"] = passes_per_image(result.summary)
    return result


def _check_out(out: str | Path, resume: str | None) -> None:
    """Before any work: ``out`` writable, and no other run's files there to overwrite.  With ``{run_id}``
    in it, the nearest folder above it that exists is checked and nothing is made (a failing run leaves
    no empty folder behind)."""
    from .report.files import check_out_dir, prepare_out_dir

    if RUN_ID_FIELD not in str(out):
        check_out_dir(Path(out), resume)
        return
    parts = Path(out).parts
    folder = Path(*parts[: next(i for i, part in enumerate(parts) if RUN_ID_FIELD in part)] or ("."))
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    prepare_out_dir(folder)


def evaluate_full(
    out: str | Path | None = None,
    store: str | Path | Store | None = None,
    resume: str | None = None,
    progress: bool = False,
    reporter: Reporter | None = None,
    ctx: DistContext | None = None,
    **options: Any,
) -> EvalResult:
    """Like :func:`evaluate` but returns records, summary and run information; writes results.csv,
    results.md and run.json to ``out`` (a folder; ``{run_id}`` in it stands for the new run's id).

    ``store``: a results-store path (or :class:`~robeval.results.store.Store`) that receives every
    finished unit, opened only once everything else is checked; ``resume``: a run id in that store to
    continue ("latest" = the newest unfinished run with the same configuration); ``progress``: show
    progress bars (or pass your own ``reporter``); ``ctx``: the distributed context (default: joined
    from torchrun's environment).  ``models`` takes names, ``PATH.py:CALLABLE`` / ``PKG.MODULE:CALLABLE``
    strings and ``nn.Module`` s (or ``(module, robeval.ModelConfig(...))`` pairs) in one list."""
    names, given = split_models(options.get("models"))
    if names is not None:
        options["models"] = names
    config = make_config(**options)
    if config.threads is not None:
        from .threads import set_threads

        set_threads(config.threads)
    joined = ctx is None  # joined here (torchrun's environment, or a single process), left here
    ctx = ctx or init_from_env(config.device)
    try:
        result = _evaluate(config, out, store, resume, reporter or _reporter(progress, ctx), ctx, given)
    finally:
        if joined:
            shutdown(ctx)
    return result


def _evaluate(
    config: EvalConfig, out, store, resume, reporter: Reporter, ctx: DistContext, given: dict[str, GivenModel]
) -> EvalResult:
    opened_later = lambda: open_store(store, ctx)  # noqa: E731  (a function: the store opens after every check)
    prepared = prepare_run(config, opened_later, resume, ctx, given)
    if out is not None and ctx.is_main:
        _check_out(out, prepared.resume)
    try:
        result = summarise(execute_run(prepared, reporter, ctx))
    finally:
        if prepared.store is not None and not isinstance(store, Store):
            prepared.store.close()  # opened here from a path: closed here (its journal folded into the file)
    if out is not None and ctx.is_main:
        from .report.files import write_run_files

        result.files = write_run_files(result, Path(str(out).replace(RUN_ID_FIELD, str(result.run["run_id"]))))
    return result


def _reporter(progress: bool, ctx: DistContext) -> Reporter:
    if not progress or not ctx.is_main:
        return NullReporter()
    from .report.terminal import RichReporter

    return RichReporter()


NOT_CARRIED = ("shift", "corruptions", "severities", "source_model", "adaptive", "settings")  # by the large-eps run


def large_eps_run(
    store: Store, run_id: str, stored_config: dict[str, Any], progress: bool = False
) -> EvalResult | None:
    """PGD at 16/255 and 64/255 on the models, data and examples of stored run ``run_id`` (its
    configuration read back from its stored identity: :meth:`robeval.options.EvalConfig.from_identity`),
    written to ``store`` as a run of its own that names it (``evidence_for``: tables of ``run_id`` take
    it in); None when the run already has them.  Shifts, transfer sources, adaptive copies and attack
    settings of the stored run are not carried over."""
    attack, wanted = LARGE_EPS_CHECK
    have = set(stored_config["eps"]) if attack in stored_config["attacks"] else set()
    missing = [e for e in wanted if e not in have]
    if not missing:
        return None
    reset = {name: option_default(name) for name in NOT_CARRIED}
    config = remake(
        EvalConfig.from_identity(stored_config), **reset, eps=missing, attacks=[attack], evidence_for=run_id
    )
    prepared = prepare_run(config, store, None, SINGLE)
    return summarise(execute_run(prepared, _reporter(progress, SINGLE)))


def reproduce(name: str, **options: Any):
    """``robeval reproduce NAME``: a paper table run (:func:`robeval.reproduce.run.reproduce`) with this
    module's :func:`evaluate_full` for its attack tables."""
    from .reproduce.run import reproduce as reproduce_table

    return reproduce_table(name, evaluate=evaluate_full, **options)


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
    there.  ``options``: any other run option (``settings``, ``seed``, ``precision``, ...) and
    ``store`` / ``resume`` / ``out`` / ``progress``; see README: RobustBench."""
    from .evaluation.protocols import AUTOATTACK_VERSIONS, autoattack_options
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
    standard = AUTOATTACK_VERSIONS.get("standard").version_attacks()
    path = model_info_path(args, options, standard) if to_disk else None  # checked before the run
    run = evaluate_full if aa_state_path is None else _resuming(aa_state_path, options)
    result, name = evaluate_module(model, args, run, options, as_version)
    clean, robust = accuracies(result.records, list(result.run["config"]["attacks"]), name)
    if _is_main():
        _benchmark_files(result, name, path, log_path)
        print_accuracies(clean, robust)
    return clean, robust


def _resuming(store: str | Path, options: dict[str, Any]):
    """``evaluate_full`` on the store at ``store`` (RobustBench's ``aa_state_path``), continuing the newest
    unfinished run there with the same configuration, else starting one."""
    if "store" in options or "resume" in options:
        raise TypeError("benchmark() takes aa_state_path or store/resume, not both")

    def run(**run_options: Any) -> EvalResult:
        resume = None
        if Path(store).exists():
            identity = planned_identity(run_options)
            with existing_store(store) as db:
                resume = newest_matching(db.unfinished_runs(), identity)
        return evaluate_full(store=store, resume=resume, **run_options)

    return run


def _is_main() -> bool:
    """Rank 0 of a torchrun launch, or a single process: the one that writes a run's files."""
    from .evaluation.distributed import launched_by_torchrun

    return not launched_by_torchrun() or os.environ.get("RANK") == "0"


def _benchmark_files(result: EvalResult, name: str, info_path: Path | None, log_path: str | None) -> None:
    """benchmark()'s ``to_disk`` model-info file and its ``log_path`` log (the run's table, appended)."""
    if info_path is not None:
        from .atomic_files import atomic_write
        from .report.robustbench import updated_model_info

        info_path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(info_path, updated_model_info(info_path, result.summary[result.summary["model"] == name]))
    if log_path is not None:
        from .report.naming import run_label
        from .report.paper import render

        with open(log_path, "a", encoding="utf-8") as log:
            log.write(f"{run_label(result.run['run_id'])} ({name})\n\n{render(result.summary, 'md')}\n")


def evaluate(**kwargs: Any) -> pd.DataFrame:
    """Evaluate models under the attack suite; returns the results table (one row per model x attack x
    eps).  The keywords are :func:`evaluate_full`'s: the run options (see the module docstring) and
    ``out`` / ``store`` / ``resume``."""
    return evaluate_full(**kwargs).summary

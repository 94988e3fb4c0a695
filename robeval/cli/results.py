"""Commands over the results store: ``check``, ``runs``, ``table``, ``compare`` and ``plot``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ..defaults import DEFAULT_STORE
from ..errors import UserError
from .app import app, console, emit
from .diagnostics import print_diagnostics


def stored_runs(store: Path, run_ids: list[str]) -> list:
    """The named runs, or the newest finished one; says on stderr which run it took when none was named."""
    from rich.console import Console

    from ..results.runs import resolve_runs
    from ..results.store import Store

    if not store.exists():
        raise UserError(f"results store not found: {store}")
    runs = resolve_runs(Store(store), run_ids)
    err = Console(stderr=True)
    if not run_ids:
        extra = (
            f" with {', '.join(r.run_id for r in runs[1:])} (made by check --run-missing for it)" if runs[1:] else ""
        )
        err.print(
            f"Using the newest finished run {runs[0].run_id}{extra} in {store} "
            f"(name run ids to choose others; `robeval runs` lists them)",
            markup=False,
            soft_wrap=True,
        )
    for run in runs:
        if run.status != "finished":
            err.print(
                f"warning: run {run.run_id} {'is still running' if run.status == 'running' else run.status}: what "
                "follows covers only the units it finished "
                f"(`robeval runs` shows its progress)",
                markup=False,
                soft_wrap=True,
            )
    return runs


@app.command("check")
def check_cmd(
    run_id: Optional[str] = typer.Argument(None, help="Run id (default: the newest finished run)."),
    store: Path = typer.Option(DEFAULT_STORE, help="Results store."),
    report: Optional[Path] = typer.Option(
        None, "--report", help="Also write the evaluation checklist (Markdown) to FILE."
    ),
    run_missing: bool = typer.Option(
        False,
        "--run-missing",
        help="With --report: first run PGD at 16/255 and 64/255 on "
        "the same models and examples where the run lacks them (a run of its own).",
    ),
) -> None:
    """Run the soundness checks on a stored run and print the flags (--report: the checklist document)."""
    from ..results.flags import all_flags, as_dicts

    if run_missing and report is None:
        raise UserError("--run-missing completes the evidence of --report FILE; name the report file too")
    if report is not None:
        from ..report.files import check_out_file

        check_out_file(report)  # before --run-missing spends minutes
    run = stored_runs(store, [run_id] if run_id else [])[0]
    flags = all_flags(run.summary, run.info.get("model_checks", {}))
    console.print(f"Run {run.run_id} ({run.protocol}, {run.status}):", markup=False)
    print_diagnostics({**run.info, "flags": as_dicts(flags)}, run.summary)
    if report is not None:
        write_checklist(store, run, report, run_missing)


def write_checklist(store: Path, run, report: Path, run_missing: bool) -> None:
    """The checklist of ``run`` to ``report``; with ``run_missing`` after the large-eps PGD run it lacks."""
    import pandas as pd

    from ..atomic_files import atomic_write
    from ..report.checklist import checklist
    from ..results.runs import minimal_norms, restart_companion
    from ..results.store import Store

    db, summary, note = Store(store), run.summary, ""
    if run_missing:
        from ..api import large_eps_run

        extra = large_eps_run(db, run.run_id, run.config, progress=True)
        if extra is not None:
            summary = pd.concat([summary, extra.summary], ignore_index=True)
            eps = ", ".join(dict.fromkeys(extra.summary["eps"]))
            note = f"\nLarge-eps evidence from run {extra.run['run_id']} (PGD at {eps}, same models and examples).\n"
            console.print(f"Ran PGD at large eps as run {extra.run['run_id']} in {store}", markup=False)
    text = checklist(
        summary,
        run.info.get("model_checks", {}),
        run.run_id,
        run.protocol,
        minimal_norms([run]),
        restart_companion(db, run),
    )
    atomic_write(report, text + note)
    console.print(f"Wrote the checklist to {report}", markup=False)


@app.command("runs")
def runs_cmd(
    store: Path = typer.Option(DEFAULT_STORE, help="Results store."),
    all_: bool = typer.Option(False, "--all", help="Also list failed runs that stored nothing."),
) -> None:
    """List stored runs with status, progress (finished/total units) and age."""
    from ..results.store import Store

    if not store.exists():
        raise UserError(f"results store not found: {store}")
    df = Store(store).runs()
    empty_failed = (df["status"] == "failed") & (df["done_units"] == 0)
    hidden = int(empty_failed.sum()) if not all_ else 0
    if hidden:
        df = df[~empty_failed]
    note = f" ({hidden} failed runs that stored nothing hidden; --all lists them)" if hidden else ""
    table = Table(title=f"runs in {store}{note}")
    for col in ("run", "status", "progress", "age", "protocol", "models", "eps", "attacks"):
        table.add_column(col)
    for r in df.itertuples():
        cfg = json.loads(r.config)
        table.add_row(
            r.id,
            Store.shown_status(r.status, r.holder),
            f"{r.done_units}/{r.total_units}",
            age(r.created),
            r.protocol,
            ", ".join(cfg["models"]),
            ",".join(cfg["eps"]),
            ",".join(cfg["attacks"]),
        )
    console.print(table)


def age(created: str) -> str:
    """How long ago a run was created: ``5m``, ``2h07m``, ``3d``."""
    from datetime import datetime, timezone

    minutes = int((datetime.now(timezone.utc) - datetime.fromisoformat(created)).total_seconds() // 60)
    if minutes >= 1440:
        return f"{minutes // 1440}d"
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"


@app.command("table")
def table_cmd(
    run_ids: Optional[list[str]] = typer.Argument(None, help="Run ids (default: the newest finished run)."),
    store: Path = typer.Option(DEFAULT_STORE, help="Results store."),
    format: str = typer.Option(
        "md",
        "--format",
        "-f",
        help="md, csv, latex, json, or robustbench (RobustBench's model-info JSON: one object per model, "
        "a list for several).",
    ),
    out: Optional[Path] = typer.Option(None, help="Write to FILE instead of printing."),
) -> None:
    """Generate the paper table (models x attacks, Top-1/Top-5, best in bold) from stored runs."""
    from rich.console import Console

    from ..report.files import check_out_file
    from ..report.paper import FORMAT_NOTES, render
    from ..results.runs import combine

    if out is not None:
        check_out_file(out)  # before the store is read

    emit(render(combine(stored_runs(store, list(run_ids or []))), format), out)
    if format in FORMAT_NOTES:
        Console(stderr=True).print(FORMAT_NOTES[format], markup=False, soft_wrap=True)


@app.command("compare")
def compare_cmd(
    a: str = typer.Argument(
        ..., help="Model A: NAME (newest run that evaluated it), RUN_ID:NAME, or a RobustBench model-info FILE.json."
    ),
    b: str = typer.Argument(..., help="Model B, likewise (one side may be a model-info file: published numbers)."),
    store: Path = typer.Option(DEFAULT_STORE, help="Results store."),
    format: str = typer.Option("md", "--format", "-f", help="md, csv or json."),
    seed: int = typer.Option(0, help="Seed of the bootstrap."),
    out: Optional[Path] = typer.Option(None, help="Write to FILE instead of printing."),
) -> None:
    """Paired comparison of two models on the same examples: differences, bootstrap CI, McNemar p (against
    a RobustBench model-info file: the run's accuracies with their CI against the published ones)."""
    from ..report.compare import compare, to_markdown
    from ..report.published_compare import compare_published, published_markdown
    from ..results.store import Store
    from ..robustbench_ext.leaderboard import is_model_info_path

    if not store.exists():
        raise UserError(f"results store not found: {store}")
    published = is_model_info_path(a) or is_model_info_path(b)
    result = (compare_published if published else compare)(Store(store), a, b, seed=seed)
    renderers = {
        "md": published_markdown if published else to_markdown,
        "csv": lambda r: r.to_csv(index=False),
        "json": lambda r: r.to_json(orient="records", indent=2) + "\n",
    }
    if format not in renderers:
        raise UserError(f"unknown format {format!r}; choose md, csv or json")
    emit(renderers[format](result), out)


@app.command("plot")
def plot_cmd(
    run_ids: Optional[list[str]] = typer.Argument(None, help="Run ids (default: the newest finished run)."),
    store: Path = typer.Option(DEFAULT_STORE, help="Results store."),
    out: Path = typer.Option(Path("results") / "plots", help="Folder for the PNG and SVG files."),
) -> None:
    """Plot robust accuracy against eps (panel per attack), a bar chart per eps, the minimum-norm curve
    (with --attacks fmn or fab-mn), accuracy against corruption severity (with --shift) and robust
    accuracy against each attack's iterations or queries (its convergence)."""
    from ..report.convergence import write_convergence_plots
    from ..report.files import prepare_out_dir
    from ..report.plots import make_plots
    from ..results.runs import combine, convergence_curves, minimal_norms
    from ..results.store import Store

    runs = stored_runs(store, list(run_ids or []))
    folder = prepare_out_dir(out)
    paths = make_plots(combine(runs), folder, minimal_norms(runs))
    paths += write_convergence_plots(convergence_curves(Store(store), runs), folder)
    console.print(f"Wrote {len(paths)} files to {out}: " + ", ".join(p.name for p in paths))

"""Commands over the results store: ``check``, ``table``, ``compare``, ``plot``, ``report``, each a
``robeval.open_run(...)`` method, printed; ``runs`` lists the runs; ``examples`` crafts stored examples again
(robeval.results.recrafting) (docs/layout.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from ..core.defaults import DEFAULT_STORE
from ..core.errors import UserError
from .app import WholeOption, app, emit, say, show

if TYPE_CHECKING:
    import pandas as pd

    from ..report.document import Document
    from ..results_api import Run

NAMED_CODE_HELP = (
    "The code of a model of the run that your code builds, as PATH.py:CALLABLE=NAME (repeatable): the only way "
    "such a model is built again; a stored run's code is never imported because the store names it."
)


@contextmanager
def opened(run_ids: list[str], store: Path, notes: bool = True) -> Iterator[Run]:
    """``robeval.open_run`` of the named runs (none: the newest finished one) for the block that computes
    the command's answer; its notes (which run was taken, runs not finished) on stderr once the block has
    it, so that a command that fails says one line, its error (``notes``: whether they are news to the
    command's reader)."""
    from ..results_api import open_run

    run = open_run(run_ids or None, store)
    yield run
    for note in run.notes if notes else []:
        say(note, err=True)


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
        "the same models and examples where the run lacks them (a run of its own; a model of your code: name "
        "it with --model).",
    ),
    code: Optional[list[str]] = typer.Option(None, "--model", "-m", help=NAMED_CODE_HELP),
) -> None:
    """Run the soundness checks on a stored run (with the runs made as its evidence) and print the flags
    (--report: every check's finding, the checklist document)."""
    if run_missing and report is None:
        raise UserError("--run-missing completes the evidence of --report FILE; name the report file too")
    with opened([run_id] if run_id else [], store) as run:
        found = run.check() if report is None else None
        evidence = None
        if run_missing and report is not None:  # the evidence run first (robeval.api: the layer that runs),
            from ..api import large_eps_run  # once FILE is known writable: a bad one costs no run in the store
            from ..report.files import check_out_file

            check_out_file(report)
            evidence = large_eps_run(run, progress=True, code=code or [])
        written = None if report is None else run.checklist(report, evidence)
    if written is None:
        emit(str(found), None)
        return
    emit(str(written.checked), None)
    if written.evidence_run is not None:
        say(f"Ran PGD at large eps as run {written.evidence_run} in {store}")
    say(f"Wrote the checklist to {written.path}")


@app.command("runs")
def runs_cmd(
    store: Path = typer.Option(DEFAULT_STORE, help="Results store."),
    all_: bool = typer.Option(False, "--all", help="Also list failed runs that stored nothing."),
) -> None:
    """List stored runs with status, progress (finished/total units) and age."""
    from ..store import existing_store

    with existing_store(store) as db:  # read-only: a path that is no store is refused, nothing is written
        df = db.runs()
    empty_failed = (df["status"] == "failed") & (df["done_units"] == 0)
    hidden = int(empty_failed.sum()) if not all_ else 0
    if hidden:
        df = df[~empty_failed]
    note = f" ({hidden} failed runs that stored nothing hidden; --all lists them)" if hidden else ""
    if df.empty:  # an empty listing is an answer, said plainly (exit code 0: the store was read)
        say(f"no runs in {store}{note}")
        return
    show(runs_document(df, f"runs in {store}{note}"))


RUNS_HEAD = ("run", "status", "progress", "age", "protocol", "models", "eps", "attacks")


def runs_document(df: pd.DataFrame, title: str) -> Document:
    """The runs of ``df`` (:meth:`robeval.store.Store.runs`) under ``title``, a row each."""
    from ..report.document import Heading, Table
    from ..store import Store

    rows = []
    for r in df.itertuples():
        cfg = json.loads(r.config)
        models, eps, attacks = ([str(v) for v in cfg.get(key) or []] for key in ("models", "eps", "attacks"))
        rows.append([
            r.id, Store.shown_status(r.status, r.holder), f"{r.done_units}/{r.total_units}", age(r.created), r.protocol,
            ", ".join(models), ",".join(eps), ",".join(attacks),
        ])  # fmt: skip
    return [Heading(title), Table(RUNS_HEAD, rows, text_columns=range(len(RUNS_HEAD)))]


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
    top1_only: bool = typer.Option(False, "--top1-only", help="Top-1 alone: one column per attack."),
    attacks: Optional[str] = typer.Option(
        None,
        "--attacks",
        metavar="LIST",
        help="The attack columns, in this order (comma list; clean and any included), e.g. pgd,apgd-ce,any. "
        "Default: every attack of the run.",
    ),
    name: Optional[list[str]] = typer.Option(
        None,
        "--name",
        metavar="MODEL=NAME",
        help="Show MODEL as NAME (repeatable), e.g. --name digits-deit-diff=DiffAttn.",
    ),
    bold: bool = typer.Option(
        True,
        "--bold/--no-bold",
        help="Bold a column's best where the claim test (robeval compare's) separates it from the runner-up; "
        "an unseparated best gets a footnote mark (--no-bold: neither).",
    ),
) -> None:
    """Generate the paper table (models x attacks, Top-1/Top-5, a column's best in bold where the claim
    test separates it from the runner-up; mean ± std for a model of several members) from stored runs;
    --top1-only, --attacks and --name make it fit a paper's column."""
    from ..report.files import check_out_file
    from ..report.naming import recipe_parts
    from ..report.paper import TableOptions, checked_format

    written = checked_format(format, TableOptions.of(top1_only, attacks, name, bold))  # before the store is read
    if out is not None:
        check_out_file(out)  # before the store is read
    with opened(list(run_ids or []), store) as run:
        table = run.table(format, top1_only=top1_only, attacks=attacks, names=name, bold=bold)
        said = recipe_parts(run.summary) if written.values else []  # data formats have no caption
    emit(table, out)
    for line in [f"note: {line}" for line in said] + ([written.note] if written.note else []):
        say(line, err=True)


@app.command("compare")
def compare_cmd(
    a: str = typer.Argument(
        ...,
        help="Model A: NAME (both sides names: the newest finished run that evaluated both, said on the first "
        "line; refused when such runs differ in threat model, protocol, data or attacks), RUN_ID:NAME, or a RobustBench model-info FILE.json.",
    ),
    b: str = typer.Argument(..., help="Model B, likewise (one side may be a model-info file: published numbers)."),
    store: Path = typer.Option(DEFAULT_STORE, help="Results store."),
    format: str = typer.Option("md", "--format", "-f", help="md, csv or json."),
    seed: int = WholeOption(0, help="Seed of the bootstrap (one checkpoint a side)."),
    out: Optional[Path] = typer.Option(None, help="Write to FILE instead of printing."),
) -> None:
    """Two models on the same examples: paired differences, bootstrap CI, McNemar p for one checkpoint each;
    for models of several members the difference of the means with an interval for seeds and examples,
    and whether it exceeds the seed-to-seed variation (against a RobustBench model-info file: the run's
    accuracies with their CI against the published ones)."""
    from ..report.comparison import COMPARE_FORMATS
    from ..report.formats import offered
    from ..results_api import pair_runs

    written = offered(format, COMPARE_FORMATS)  # a bad format is refused before the store is read
    runs, picked = pair_runs(store, a, b)
    with opened(runs, store, notes=False) as run:
        compared = run.compare(a, b, seed)
    compared.preface = picked  # which run, and why, on the document's first line
    if picked is not None and written.values:  # a data format holds data only: the choice is said on stderr
        say(picked, err=True)
    emit(compared.render(format), out)


@app.command("plot")
def plot_cmd(
    run_ids: Optional[list[str]] = typer.Argument(None, help="Run ids (default: the newest finished run)."),
    store: Path = typer.Option(DEFAULT_STORE, help="Results store."),
    out: Path = typer.Option(Path("results") / "plots", help="Folder for the PNG and SVG files."),
) -> None:
    """Plot robust accuracy against eps (panel per attack), a bar chart per eps, the minimum-norm curve
    (with --attacks fmn or fab-mn), accuracy against corruption severity (with --shift) and robust
    accuracy against each attack's iterations or queries (its convergence)."""
    with opened(list(run_ids or []), store) as run:
        paths = run.plot(out)
    say(f"Wrote {len(paths)} files to {out}: " + ", ".join(p.name for p in paths))


@app.command("report")
def report_cmd(
    run_ids: Optional[list[str]] = typer.Argument(None, help="Run ids (default: the newest finished run)."),
    store: Path = typer.Option(DEFAULT_STORE, help="Results store."),
    out: Path = typer.Option(Path("results") / "report.html", help="The HTML file to write."),
    gallery_attack: Optional[str] = typer.Option(
        None,
        "--gallery-attack",
        help="The attack the gallery crafts again (default: PGD, or the run's first per-example one).",
    ),
    gallery_size: int = WholeOption(6, "--gallery-size", help="Examples in the gallery (0: no gallery)."),
    baseline: Optional[str] = typer.Option(
        None,
        "--baseline",
        help="The model of the first run every other model is compared with (default: its first model); of "
        "several runs, every pair of models is compared, the baseline's first.",
    ),
    code: Optional[list[str]] = typer.Option(None, "--model", "-m", help=NAMED_CODE_HELP),
) -> None:
    """Write one HTML page (opens offline: styles, script and figures inline) with the paper table, the
    figures, the convergence curves, the checklist, the efficiency table, every model compared with a
    baseline (of several runs: every pair of models), a gallery of regenerated adversarial examples of
    every model and each run's configuration."""
    from ..results_api import check_report_out

    check_report_out(out, gallery_size)  # before the store is read
    with opened(list(run_ids or []), store) as run:
        written = run.report(out, gallery_attack, gallery_size, baseline, code or [])
    size = written.stat().st_size / 1024
    say(f"Wrote {written} ({size:.0f} KiB, one file: open it in a browser)")


FIGURE_SUFFIXES = (".png", ".svg")


@app.command("examples")
def examples_cmd(
    run_id: str = typer.Argument(..., help="Run id (`robeval runs` lists them)."),
    model: Optional[list[str]] = typer.Option(
        None,
        "--model",
        "-m",
        help="A model of the run to draw (repeatable; side by side in this order; default every model). "
        "In --select, A and B are the first and second. " + NAMED_CODE_HELP,
    ),
    attack: str = typer.Option(..., "--attack", "-a", help="The attack of the run whose images to craft again."),
    eps: Optional[str] = typer.Option(None, help="An eps of the run (default: its only one)."),
    select: Optional[str] = typer.Option(
        None,
        "--select",
        help="Conditions on the examples' records, comma-separated, each MODEL-fooled (right on the clean image, "
        "wrong under the attack) or MODEL-robust (right under the attack); MODEL: a model of the run, or A/B. "
        'E.g. "A-fooled,B-robust". Default: where the drawn models disagree first.',
    ),
    examples: Optional[str] = typer.Option(None, "--examples", help="Example indices instead (3,17,42)."),
    max_examples: int = WholeOption(8, "--max", help="At most this many examples (rows)."),
    out: Optional[Path] = typer.Option(
        None,
        "--out",
        "-o",
        help="The figure: PNG, or SVG when it ends in .svg (default results/examples-RUN-ATTACK.png).",
    ),
    store: Path = typer.Option(DEFAULT_STORE, help="Results store."),
    device: str = typer.Option("auto", help="auto, cpu, cuda or cuda:N."),
    data_dir: str = typer.Option("./data", help="Where --data cifar10/cifar100/mnist of the run are read."),
    trust_checkpoint: bool = typer.Option(False, help="Allow full unpickling of the run's checkpoints."),
    threads: Optional[int] = WholeOption(
        None, help="CPU threads (default: as many as the run used; another count may round differently)."
    ),
) -> None:
    """Craft stored adversarial examples again from their seeds (per-example attacks: exactly), check
    each prediction and perturbation norm against its stored record, and draw clean | adversarial |
    perturbation for each model side by side.  Exit 1 when a regenerated record differs."""
    from ..report.files import check_out_file
    from ..report.gallery import draw_gallery
    from ..results.recrafting import plan_recrafting

    out = out or Path("results") / f"examples-{run_id}-{attack}.png"
    if out.suffix.lower() not in FIGURE_SUFFIXES:
        raise UserError(f"--out {out}: the figure is written as .png or .svg")
    options = dict(device=device, data_dir=data_dir, trust_checkpoint=trust_checkpoint, threads=threads)
    plan = plan_recrafting(store, run_id, model, attack, eps, select, examples, max_examples, **options)
    check_out_file(out)  # before minutes of crafting
    shown = draw_gallery(plan)
    for line in shown.report():
        say(line)
    shown.write(out)
    rows, models = len(shown.examples), len(plan.models)
    say(f"Wrote {out} ({rows} example{'s' * (rows != 1)} x {models} model{'s' * (models != 1)})")
    if shown.mismatches:
        raise typer.Exit(1)

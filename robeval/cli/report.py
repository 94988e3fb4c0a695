"""``robeval report``: one self-contained HTML page of stored runs (``open_run(...).report(out)``)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..core.defaults import DEFAULT_STORE
from .app import WholeOption, app, console
from .results import NAMED_CODE_HELP, opened


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
    console.print(f"Wrote {written} ({size:.0f} KiB, one file: open it in a browser)", markup=False)

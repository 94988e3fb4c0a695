"""``robeval report``: one self-contained HTML page of stored runs (robeval.report.html_page)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..defaults import DEFAULT_STORE
from ..errors import UserError
from .app import app, console
from .results import stored_runs


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
    gallery_size: int = typer.Option(6, "--gallery-size", help="Examples in the gallery (0: no gallery)."),
) -> None:
    """Write one HTML page (opens offline: styles, script and figures inline) with the paper table, the
    figures, the convergence curves, the checklist, the efficiency table, the paired comparison of the
    first two models, a gallery of regenerated adversarial examples and each run's configuration."""
    from ..atomic_files import atomic_write
    from ..report.files import check_out_file
    from ..report.html_page import html_report
    from ..results.store import Store

    if out.suffix.lower() not in (".html", ".htm"):
        raise UserError(f"--out {out}: the report is an HTML file; name it *.html")
    if gallery_size < 0:
        raise UserError(f"--gallery-size must be 0 or more, got {gallery_size}")
    check_out_file(out)  # before the store is read
    runs = stored_runs(store, list(run_ids or []))
    page = html_report(Store(store), runs, gallery_attack=gallery_attack, gallery_size=gallery_size)
    atomic_write(out, page)
    console.print(f"Wrote {out} ({len(page) / 1024:.0f} KiB, one file: open it in a browser)", markup=False)

"""``robeval reproduce``: one command per paper table."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from ..defaults import DEFAULT_STORE
from ..errors import UserError
from .app import app, console


def _list_tables() -> None:
    from ..reproduce import list_tables

    table = Table(title="paper tables (robeval reproduce NAME)")
    for col in ("name", "kind", "rows", "attacks, eps, protocol", "what it is"):
        table.add_column(col)
    for t in list_tables():
        setting = {"attacks": f"{', '.join(t.attacks)}; eps {t.eps}; {t.protocol}",
                   "accuracy": f"clean accuracy; {t.protocol}"}.get(t.kind, "robeval profile")
        table.add_row(t.name, t.kind, ", ".join(r.label for r in t.rows), setting, t.title)
    console.print(table)


@app.command("reproduce")
def reproduce_cmd(
    name: Optional[str] = typer.Argument(None, help="Paper table (see --list)."),
    list_: bool = typer.Option(False, "--list", help="List the paper tables."),
    data: str = typer.Option("digits", help="'digits' (every row's digits model) or an ImageNet-style folder."),
    checkpoint: Optional[List[str]] = typer.Option(None, "--checkpoint", "-c", help="MODEL=PATH or ROW LABEL=PATH (repeatable)."),
    n_examples: Optional[int] = typer.Option(None, "--n-examples", "-n", help="Class-balanced subset size."),
    protocol: Optional[str] = typer.Option(None, help="Default: the table's own; 'standard' for the valid threat model."),
    eps: Optional[str] = typer.Option(None, help="Default: the table's eps (on digits: the demo's 8/255)."),
    out: Optional[Path] = typer.Option(None, help="Output folder (default results/reproduce-NAME)."),
    store: Path = typer.Option(DEFAULT_STORE, help="Results store (attack tables)."),
    resume: Optional[str] = typer.Option(None, "--resume", metavar="[RUN_ID]", help="Continue an interrupted reproduction."),
    seed: int = typer.Option(0, help="Seed of every random choice."),
    batch_size: Optional[int] = typer.Option(None, help="Images per batch."),
    device: str = typer.Option("auto", help="auto, cpu, cuda or cuda:N."),
    weights: str = typer.Option("default", help="default or random (smoke tests; marked in the tables)."),
    repeats: int = typer.Option(5, help="Efficiency tables: timed repeats per model."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
) -> None:
    """Regenerate a paper table: its models, attacks, eps, norm and protocol, in its own layout (md, csv, tex)."""
    if list_ or name is None:
        _list_tables()
        return
    from ..reproduce import get_table, reproduce
    from .run import raise_terminated, report_interrupt, split_checkpoints

    table = get_table(name)
    # an attack table is a run: by default each reproduction gets a folder of its own (runs never overwrite)
    out = out or Path("results") / f"reproduce-{name}" / ("{run_id}" if table.kind != "efficiency" else "")
    if table.kind == "efficiency":
        if checkpoint:
            raise UserError(f"{name} profiles the architectures (weights do not change speed, memory or FLOPs); "
                            "--checkpoint does not apply")
        result = reproduce(name, data=data, out=out, batch_size=batch_size or 8,
                           device="cpu" if device == "auto" else device, repeats=repeats)
    else:
        from ..report.terminal import RichReporter
        from ..robustbench_ext.engine import NullReporter

        models = [r.digits if data == "digits" else r.imagenet for r in table.rows]
        signal.signal(signal.SIGTERM, raise_terminated)
        try:
            result = reproduce(name, data=data, out=out, checkpoints=split_checkpoints(list(checkpoint or []), models),
                               protocol=protocol, eps=eps, n_examples=n_examples, store=store, resume=resume,
                               seed=seed, batch_size=batch_size, device=device, weights=weights,
                               reporter=NullReporter() if quiet else RichReporter())
        except KeyboardInterrupt as exc:  # as `robeval run`: what was kept, and the command that resumes it
            raise typer.Exit(report_interrupt(exc, store)) from None
    console.print(result.files["md"].read_text(), markup=False, soft_wrap=True)
    console.print("Wrote " + ", ".join(str(p) for p in result.files.values())
                  + (f"; run {result.result.run['run_id']} stored in {store}" if result.result is not None else ""),
                  markup=False, soft_wrap=True)

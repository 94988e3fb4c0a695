"""``robeval reproduce``: one command per paper table."""

from __future__ import annotations

import inspect
import signal
import typing
from dataclasses import fields
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from ..defaults import DEFAULT_STORE, DIGITS
from ..errors import UserError
from ..options import EvalConfig
from .app import app, console


def _list_tables() -> None:
    from ..reproduce import list_tables

    table = Table(title="paper tables (robeval reproduce NAME)")
    for col in ("name", "kind", "rows", "attacks, eps, protocol", "what it is"):
        table.add_column(col)
    for t in list_tables():
        setting = {
            "attacks": f"{', '.join(t.attacks)}; eps {t.eps}; {t.protocol}",
            "accuracy": f"clean accuracy; {t.protocol}",
        }.get(t.kind, "robeval profile")
        table.add_row(t.name, t.kind, ", ".join(r.label for r in t.rows), setting, t.title)
    console.print(table)


# The run options a reproduction takes (their declarations and help are robeval.options'), with the
# defaults that mean "the table's own" where the table fixes them.
RUN_OPTIONS = ("data", "checkpoints", "n_examples", "protocol", "eps", "seed", "batch_size", "device", "weights")
OWN_DEFAULTS = {"protocol": None, "eps": None}  # None: the table's own (on digits: eps 8/255)
COMMAND_OPTIONS = {
    "name": (Optional[str], typer.Argument(None, help="Paper table (see --list).")),
    "list_": (bool, typer.Option(False, "--list", help="List the paper tables.")),
    "out": (Optional[Path], typer.Option(None, help="Output folder (default results/reproduce-NAME/<run id>).")),
    "store": (Path, typer.Option(DEFAULT_STORE, help="Results store (attack tables).")),
    "resume": (
        Optional[str],
        typer.Option(None, "--resume", metavar="[RUN_ID]", help="Continue an interrupted reproduction."),
    ),
    "repeats": (int, typer.Option(5, help="Efficiency tables: timed repeats per model.")),
    "quiet": (bool, typer.Option(False, "--quiet", "-q", help="No progress bars.")),
}


def command_signature() -> inspect.Signature:
    from .run import option_parameter

    types = typing.get_type_hints(EvalConfig)
    params = [
        inspect.Parameter(
            name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD if name == "name" else inspect.Parameter.KEYWORD_ONLY,
            annotation=kind,
            default=default,
        )
        for name, (kind, default) in COMMAND_OPTIONS.items()
    ]
    params += [option_parameter(f, types, OWN_DEFAULTS) for f in fields(EvalConfig) if f.name in RUN_OPTIONS]
    return inspect.Signature(params)


def reproduce_cmd(**values: Any) -> None:
    """Regenerate a paper table: its models, attacks, eps, norm and protocol, in its own layout (md, csv, tex)."""
    if values["list_"] or values["name"] is None:
        _list_tables()
        return
    from ..reproduce import get_table

    name, store = values["name"], values["store"]
    table = get_table(name)
    # an attack table is a run: by default each reproduction gets a folder of its own (runs never overwrite)
    out = values["out"] or Path("results") / f"reproduce-{name}" / ("{run_id}" if table.kind != "efficiency" else "")
    result = _efficiency(name, values, out) if table.kind == "efficiency" else _attack_table(table, values, out)
    console.print(result.files["md"].read_text(), markup=False, soft_wrap=True)
    stored = f"; run {result.result.run['run_id']} stored in {store}" if result.result is not None else ""
    console.print("Wrote " + ", ".join(str(p) for p in result.files.values()) + stored, markup=False, soft_wrap=True)


reproduce_cmd.__signature__ = command_signature()  # type: ignore[attr-defined]
app.command("reproduce")(reproduce_cmd)


def _efficiency(name: str, values: dict[str, Any], out: Path):
    """An efficiency table: robeval profile of the table's architectures."""
    from ..api import reproduce

    if values["checkpoints"]:
        raise UserError(
            f"{name} profiles the architectures (weights do not change speed, memory or FLOPs); "
            "--checkpoint does not apply"
        )
    device = "cpu" if values["device"] == "auto" else values["device"]
    return reproduce(
        name,
        data=values["data"],
        out=out,
        batch_size=values["batch_size"] or 8,
        device=device,
        repeats=values["repeats"],
    )


def _attack_table(table, values: dict[str, Any], out: Path):
    """An attack (or accuracy) table: a stored run of the table's models, resumable as `robeval run` is."""
    from ..api import reproduce
    from ..evaluation.config import split_checkpoints
    from .stopping import raise_terminated, report_interrupt

    models = [r.digits if values["data"] == DIGITS else r.imagenet for r in table.rows]
    options = {k: values[k] for k in RUN_OPTIONS if k != "checkpoints"}
    signal.signal(signal.SIGTERM, raise_terminated)
    try:
        return reproduce(
            table.name,
            out=out,
            checkpoints=split_checkpoints(list(values["checkpoints"] or []), models),
            store=values["store"],
            resume=values["resume"],
            progress=not values["quiet"],
            **options,
        )
    except KeyboardInterrupt as exc:  # as `robeval run`: what was kept, and the command that resumes it
        raise typer.Exit(report_interrupt(exc, values["store"])) from None

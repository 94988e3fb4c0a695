"""``robeval reproduce``: one command per paper table."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any, Optional

import typer

from ..core.defaults import DEFAULT_STORE, DIGITS
from ..core.errors import UserError
from ..options import EvalConfig
from .app import WholeOption, app, resumable, say, show
from .run import command_signature

SETTINGS = {  # what --list says a table of each kind runs
    "attacks": lambda t: f"{', '.join(t.attacks)}; eps {t.eps}; {t.protocol}",
    "accuracy": lambda t: f"clean accuracy; {t.protocol}",
    "efficiency": lambda t: (
        "robeval profile" + "".join(f"; {k.replace('_', ' ')} {v}" for k, v in t.profile_options.items())
    ),
    "shift": lambda t: "a run per column; --data-for " + ", ".join(t.data_keys(digits=False)),
    "accuracy-by-data": lambda t: "a run per column; --data-for " + ", ".join(t.data_keys(digits=False)),
}


def _list_tables() -> None:
    from ..report.document import Table
    from ..reproduce import list_tables

    rows = []
    for t in list_tables():
        runs = SETTINGS[t.kind](t) + (f"; mean ± std over {t.members} checkpoints per model" if t.members > 1 else "")
        rows.append([t.name, t.kind, ", ".join(r.label for r in t.rows), runs, t.title])
    head = ("name", "kind", "rows", "what it runs", "what it is")
    show([Table(head, rows, text_columns=range(len(head)), title="paper tables (robeval reproduce NAME)")])


# The run options a reproduction takes (their declarations and help are robeval.options'), with the
# defaults that mean "the table's own" where the table fixes them.
RUN_OPTIONS = ("data", "data_dir", "split", "selection", "checkpoints", "n_examples", "protocol", "eps", "severities",
               "seed", "batch_size", "device", "weights")  # fmt: skip
OWN_DEFAULTS = {"protocol": None, "eps": None}  # None: the table's own (on digits: eps 8/255)
COMMAND_OPTIONS = {
    "name": (Optional[str], typer.Argument(None, help="Paper table (see --list).")),
    "list_": (bool, typer.Option(False, "--list", help="List the paper tables.")),
    "data_for": (
        Optional[list[str]],
        typer.Option(
            None,
            "--data-for",
            metavar="KEY=PATH",
            help="Tables whose columns read their own data (see --list): each column's folder, e.g. "
            "imagenet-r=PATH (repeatable; none: the digits version).",
        ),
    ),
    "out": (Optional[Path], typer.Option(None, help="Output folder (default results/reproduce-NAME/<run id>).")),
    "store": (Path, typer.Option(DEFAULT_STORE, help="Results store (attack tables).")),
    "resume": (
        Optional[str],
        typer.Option(None, "--resume", metavar="[RUN_ID]", help="Continue an interrupted reproduction."),
    ),
    "repeats": (int, WholeOption(5, help="Efficiency tables: timed repeats per model.")),
    "quiet": (bool, typer.Option(False, "--quiet", "-q", help="No progress bars.")),
}


def reproduce_cmd(**values: Any) -> None:
    """Regenerate a paper table: its models, attacks, eps, norm and protocol, in its own layout (md, csv, tex)."""
    if values["list_"] or values["name"] is None:
        _list_tables()
        return
    from ..reproduce import TABLES

    name, store = values["name"], values["store"]
    table = TABLES.require(name)
    # a table that runs gets a folder of its own per reproduction (runs never overwrite); a profile does not
    out = values["out"] or Path("results") / f"reproduce-{name}" / ("{run_id}" if table.runner != "profile" else "")
    result = _efficiency(name, values, out) if table.runner == "profile" else _stored_runs(table, values, out)
    say(result.files["md"].read_text())
    runs = [r.run_id for r in ([result.result] if result.result else list((result.results or {}).values()))]
    stored = f"; run{'s' if len(runs) > 1 else ''} {', '.join(map(str, runs))} stored in {store}" if runs else ""
    say("Wrote " + ", ".join(str(p) for p in result.files.values()) + stored)


reproduce_cmd.__signature__ = command_signature(  # type: ignore[attr-defined]
    [f for f in fields(EvalConfig) if f.name in RUN_OPTIONS], COMMAND_OPTIONS, OWN_DEFAULTS
)
app.command("reproduce")(reproduce_cmd)


def _efficiency(name: str, values: dict[str, Any], out: Path):
    """An efficiency table: robeval profile of the table's architectures."""
    from ..api import reproduce

    if values["checkpoints"]:
        raise UserError(
            f"{name} profiles the architectures (weights do not change speed, memory or FLOPs); "
            "--checkpoint does not apply"
        )
    if values["data_for"]:
        raise UserError(f"{name} profiles architectures and reads no data: --data-for does not apply")
    given = {"batch_size": values["batch_size"], "device": None if values["device"] == "auto" else values["device"]}
    return reproduce(
        name,
        data=values["data"],
        out=out,
        repeats=values["repeats"],
        **{k: v for k, v in given.items() if v is not None},  # else the table's own, or robeval profile's
    )


def split_data_for(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, eq, path = item.partition("=")
        if not (eq and key and path):
            raise UserError(f"--data-for {item!r}: write KEY=PATH")
        out[key.strip()] = path.strip()
    return out


def _stored_runs(table, values: dict[str, Any], out: Path):
    """A table that runs (attacks, accuracy, a run per column): stored runs of the table's models,
    resumable as `robeval run` is."""
    from ..api import reproduce
    from ..evaluation.config import split_checkpoints

    data_for = split_data_for(values["data_for"] or [])
    digits = not data_for if table.runner == "column-runs" else values["data"] == DIGITS
    options = {k: values[k] for k in RUN_OPTIONS if k != "checkpoints" and values.get(k) is not None}
    with resumable(values["store"]):  # as `robeval run`: what was kept, and the command that resumes it
        return reproduce(
            table.name,
            out=out,
            checkpoints=split_checkpoints(list(values["checkpoints"] or []), table.every_model(digits)),
            data_for=data_for,
            store=values["store"],
            resume=values["resume"],
            progress=not values["quiet"],
            **options,
        )

"""``robeval reproduce NAME``: run exactly what a paper table ran, then render it in the table's layout
(one run, a profile, or one run per column, and the files written: docs/reproduce.md, "What a table is").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..core.atomic_files import nearest_folder
from ..core.defaults import RUN_ID_FIELD
from ..core.errors import UserError
from ..evaluation.config import member_paths
from ..report.files import prepare_out_dir
from . import render
from .column_runs import column_runs
from .render import Reproduction, Request, write
from .tables import TABLES, PaperTable

PROFILE_OPTIONS = {"batch_size": 8, "device": "cpu", "repeats": 5, "memory": True}  # robeval profile's


def reproduce(
    name: str,
    evaluate: Callable[..., Any],
    data: str = "digits",
    out: str | Path | None = None,
    checkpoints: dict[str, str | list[str]] | None = None,
    protocol: str | None = None,
    eps: str | None = None,
    data_for: dict[str, str] | None = None,
    **run_options: Any,
) -> Reproduction:
    """Run table ``name`` on ``data`` ("digits" maps every row to its digits model) and write it to ``out``.

    ``checkpoints`` may name models by the paper's row label too (``DeiT-Elliptical=ckpt.pth``), and give
    a model several (its members: a list, ``A,B,C`` or a glob; a table of mean ± std over training runs
    needs them for every model);
    ``data_for`` gives a table whose columns read their own data each column's data by key
    (``{"imagenet-r": PATH, ...}``; none: its digits version); ``run_options`` go to ``evaluate``
    (:func:`robeval.api.evaluate_full`: ``n_examples``, ``store``, ``resume``, ``severities``, ...) for
    the tables that run, and to :func:`robeval.evaluation.profiling.profile` (``batch_size``,
    ``device``, ``repeats``, ``memory``) for efficiency tables.  Call it as
    :func:`robeval.api.reproduce`, which gives ``evaluate``."""
    table = TABLES.require(name)
    digits = _digits_version(table, data, data_for or {})
    resolved = resolve_checkpoints(table, digits, checkpoints or {})
    check_members(table, digits, resolved)
    if out is not None:  # writable before any work; a folder named after the run is made once it is known
        head, field, _ = str(out).partition(RUN_ID_FIELD)
        prepare_out_dir(nearest_folder(Path(head)) if field else Path(out))
    request = Request(
        table, digits, evaluate, None if out is None else str(out), resolved, protocol, eps, data, data_for or {},
        run_options,
    )  # fmt: skip
    return RUNNERS[table.runner](request)


def check_members(table: PaperTable, digits: bool, checkpoints: dict[str, list[str]]) -> None:
    """A table whose cells average several training runs per model needs several checkpoints for each
    of its models (their members): one line naming the first without, rather than a table of one
    checkpoint each that would print as if it were the spread over seeds."""
    if table.members <= 1:
        return
    lacking = [m for m in table.every_model(digits) if len(checkpoints.get(m, [])) < 2]
    if lacking:
        raise UserError(
            f"{table.name} needs several checkpoints for each model (mean ± std over its members; the paper: "
            f"{table.members} training runs each): {lacking[0]} has {len(checkpoints.get(lacking[0], []))}; give "
            f"--checkpoint {lacking[0]}=A,B,C or a quoted glob (robeval train-demo --model {lacking[0]} --seeds "
            f"0-{table.members - 1} --out seeds/ makes them)"
        )


def _digits_version(table: PaperTable, data: str, data_for: dict[str, str]) -> bool:
    """Whether the digits version runs; a column-runs table takes its data per column only."""
    if table.runner != "column-runs":
        if data_for:
            raise UserError(
                f"{table.name} reads one data set (--data PATH); --data-for is for tables whose columns read their own"
            )
        return data == "digits"
    if data != "digits":
        keys = ", ".join(table.data_keys(digits=False))
        raise UserError(f"{table.name} reads each column's data with --data-for KEY=PATH (KEY: {keys}), not --data")
    return not data_for


def row_models(table: PaperTable, digits: bool) -> dict[str, list[str]]:
    """Row label -> the models filling that row (one per column that runs, or the row's own)."""
    columns = [c for c in table.table_columns(digits) if c.runs and c.models]
    return {
        r.label: list(dict.fromkeys([table.column_models(c, digits)[i] for c in columns] or [r.model(digits)]))
        for i, r in enumerate(table.rows)
    }


def resolve_checkpoints(
    table: PaperTable, digits: bool, checkpoints: Mapping[str, str | list[str]]
) -> dict[str, list[str]]:
    """Checkpoints by model name, each model's members expanded (``A,B,C``, globs); a row label stands for
    its row's model when the row is one model."""
    by_label, known = row_models(table, digits), table.every_model(digits)
    out = {}
    for key, given in checkpoints.items():
        models = by_label.get(key, [key])
        if len(models) > 1:
            raise UserError(f"--checkpoint {key}: that row is several models ({', '.join(models)}): name the model")
        if models[0] not in known:
            raise UserError(f"--checkpoint {key}: not a row or model of {table.name} (its models: {', '.join(known)})")
        out[models[0]] = member_paths(models[0], given)
    return out


def _one_run(req: Request) -> Reproduction:
    """An attack or accuracy table: one stored run of the table's models."""
    table = req.table
    chosen_eps = req.eps or (table.digits_eps if req.digits else table.eps)
    result = req.evaluate(
        models=table.every_model(req.digits),
        data=req.data,
        eps=chosen_eps,
        attacks=",".join(table.attacks) or "none",
        norm=table.norm,
        protocol=req.protocol or table.protocol,
        checkpoints=req.checkpoints,
        out=req.out,
        **req.options,
    )
    phrases = render.caption(table, req.digits, result.summary, chosen_eps)
    grid = render.LAYOUTS[table.layout](table, result.summary, table.labels(req.digits))
    folder = None if req.out is None else req.out.replace(RUN_ID_FIELD, result.run_id)
    return write(Reproduction(table, phrases, grid, {}, result), folder)


def _profile(req: Request) -> Reproduction:
    """An efficiency table: robeval profile of the table's distinct models, once each."""
    from ..evaluation.profiling import profile

    table = req.table
    unknown = set(req.options) - set(PROFILE_OPTIONS)
    if unknown or req.checkpoints:
        given = sorted(unknown | ({"--checkpoint"} if req.checkpoints else set()))
        raise UserError(
            f"{table.name} is an efficiency table (robeval profile): it takes --batch-size, --device and "
            f"--repeats, not {', '.join(given)}"
        )
    measured = profile(table.every_model(req.digits), **{**PROFILE_OPTIONS, **table.profile_options, **req.options})
    grid = render.PROFILE_LAYOUTS[table.layout](table, measured, req.digits)
    phrases = render.caption(table, req.digits, extra=render.profile_parts(table, measured))
    return write(Reproduction(table, phrases, grid, {}), None if req.out is None else req.out.replace(RUN_ID_FIELD, ""))


RUNNERS: dict[str, Callable[[Request], Reproduction]] = {
    "run": _one_run,
    "profile": _profile,
    "column-runs": column_runs,
}

"""``robeval reproduce NAME``: run exactly what a paper table ran, then render it in the table's layout.

Attack tables are ordinary runs (same store, so ``--resume``, ``table``, ``compare`` and ``plot``
work on them); efficiency tables are ``robeval profile``.  Either way the table is written as
``table.md``, ``table.csv`` and ``table.tex`` next to the run's own files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..report.files import atomic_write, prepare_out_dir
from . import render
from .tables import PaperTable, get_table


@dataclass
class Reproduction:
    table: PaperTable
    text: str  # the caption
    grid: Any  # pandas DataFrame in the table's layout
    files: dict[str, Path]
    result: Any = None  # the EvalResult of an attack table


def reproduce(
    name: str,
    evaluate: Callable[..., Any],
    data: str = "digits",
    out: str | Path | None = None,
    checkpoints: dict[str, str] | None = None,
    protocol: str | None = None,
    eps: str | None = None,
    **run_options: Any,
) -> Reproduction:
    """Run table ``name`` on ``data`` ("digits" maps every row to its digits model) and write it to ``out``.

    ``checkpoints`` may name models by the paper's row label too (``DeiT-Elliptical=ckpt.pth``);
    ``run_options`` go to ``evaluate`` (:func:`robeval.api.evaluate_full`: ``n_examples``, ``store``,
    ``resume``, ...) for attack tables and to :func:`robeval.evaluation.profiling.profile`
    (``batch_size``, ``device``, ``repeats``, ``memory``) for efficiency tables.  Call it as
    :func:`robeval.api.reproduce`, which gives ``evaluate``."""
    table = get_table(name)
    if out is not None:
        prepare_out_dir(Path(str(out).partition("{run_id}")[0] or "."))  # writable, before any work
    digits = data == "digits"
    labels = table.labels(digits)
    models = table.models(digits)
    by_label = {label: model for model, label in labels.items()}
    checkpoints = {by_label.get(k, k): v for k, v in (checkpoints or {}).items()}
    if table.kind == "efficiency":
        from ..evaluation.profiling import profile

        unknown = set(run_options) - {"batch_size", "device", "repeats", "memory"}
        if unknown or checkpoints:
            raise UserError(
                f"{name} is an efficiency table (robeval profile): it takes --batch-size, --device and "
                f"--repeats, not {', '.join(sorted(unknown | ({'--checkpoint'} if checkpoints else set())))}"
            )
        grid = render.efficiency_grid(profile(models, **run_options), labels)
        return _write(table, render.caption(table, digits), render.caption(table, digits, latex=True), grid, out, None)
    chosen_eps = eps or (table.digits_eps if digits else table.eps)
    result = evaluate(
        models=models,
        data=data,
        eps=chosen_eps,
        attacks=",".join(table.attacks) or "none",
        norm=table.norm,
        protocol=protocol or table.protocol,
        checkpoints=checkpoints,
        out=out,
        **run_options,
    )
    text, latex = (render.caption(table, digits, result.summary, chosen_eps, latex=flag) for flag in (False, True))
    return _write(table, text, latex, render.LAYOUTS[table.layout](table, result.summary, labels), out, result)


def _write(table: PaperTable, text: str, latex: str, grid, out: str | Path | None, result) -> Reproduction:
    files: dict[str, Path] = {}
    if out is not None:
        folder = prepare_out_dir(Path(str(out).replace("{run_id}", str(result.run["run_id"]) if result else "")))
        for suffix, body in (
            ("md", render.to_markdown(grid, text)),
            ("csv", render.to_csv(grid)),
            ("tex", render.to_latex(grid, latex)),
        ):
            files[suffix] = folder / f"table.{suffix}"
            atomic_write(files[suffix], body)
    return Reproduction(table, text, grid, files, result)

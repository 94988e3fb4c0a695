"""The efficiency tables' grids and what their captions say the figures are, from one
:func:`robeval.evaluation.profiling.profile` of the table's distinct models (on the digits demo several
rows may be one model: it is profiled once and fills each of them).

Units, stated in every caption: *speed* is iterations per second, one iteration being a forward and
a backward pass (gradients of the weights and of the input, no optimiser step) on a batch of the
profile's batch size; *max memory* what such a pass adds to the memory in use; *FLOPs/sample* the
matrix products and convolutions of one image's forward pass; *inference time per image* the
forward pass alone, 1000 / (images per second), at the profile's batch size.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from .tables import PaperTable


def _speed(r: pd.Series) -> float:
    return r["forward_backward_img_s"] / r["batch_size"]


# (column title, its value from a profile row, digits shown)
EFFICIENCY_COLUMNS: tuple[tuple[str, Callable[[pd.Series], float], int], ...] = (
    ("Speed (it/s)", _speed, 2),
    ("Max memory (MB)", lambda r: r["pass_memory_MB"], 1),
    ("FLOPs/sample (G)", lambda r: r["gflops_per_image"], 3),
    ("Params (M)", lambda r: r["params_M"], 2),
)
PROFILE_MEASURES: dict[str, Callable[[pd.Series], float]] = {  # a Column's measure in a profile table
    "latency-ms": lambda r: 1000.0 / r["forward_img_s"],
}


def _number(value, digits: int) -> str:
    """``digits`` decimals; below 1, four significant digits (the digits demo's models are tiny)."""
    if value is None or pd.isna(value):
        return "n/a"
    return f"{value:,.{digits}f}" if abs(value) >= 1 else f"{value:.4g}"


def _cell(value, reference, digits: int) -> str:
    """The value, with its change (%) against ``reference`` when there is one."""
    text = _number(value, digits)
    if text == "n/a" or reference is None or pd.isna(reference) or not reference:
        return text
    return f"{text} ({100.0 * (value - reference) / reference:+.1f}%)"


def efficiency_grid(table: PaperTable, profile: pd.DataFrame, digits: bool) -> pd.DataFrame:
    """Rows = the table's rows, columns = speed, memory, FLOPs, parameters; a row with ``against``
    shows its change against that row."""
    by_model = profile.set_index("model")
    model_of = {r.label: r.model(digits) for r in table.rows}
    out = pd.DataFrame(index=[r.label for r in table.rows])
    for title, value, shown in EFFICIENCY_COLUMNS:
        out[title] = [
            _cell(
                value(by_model.loc[r.model(digits)]),
                value(by_model.loc[model_of[r.against]]) if r.against else None,
                shown,
            )
            for r in table.rows
        ]
    return out


def latency_grid(table: PaperTable, profile: pd.DataFrame, digits: bool) -> pd.DataFrame:
    """Rows = the table's rows, columns = the table's columns, each a family of models (one per row)."""
    by_model = profile.set_index("model")
    out = pd.DataFrame(index=[r.label for r in table.rows])
    for column in table.table_columns(digits):
        measure = PROFILE_MEASURES[column.measure]
        out[column.title] = [_number(measure(by_model.loc[m]), 2) for m in table.column_models(column, digits)]
    return out


PROFILE_LAYOUTS = {"efficiency": efficiency_grid, "latency-as-columns": latency_grid}


def profile_parts(table: PaperTable, profile: pd.DataFrame) -> list[str]:
    """What the figures are: units, batch, device, threads, repeats (the caption's own phrases)."""
    import torch

    first = profile.iloc[0]
    how = f"median of {first['repeats']} interleaved repeats on {first['device']} ({torch.get_num_threads()} threads)"
    if table.layout == "latency-as-columns":
        return [
            f"inference time per image (ms): forward passes alone (no gradients) at batch size {first['batch_size']}, "
            f"1000 / images per second; {how}"
        ]
    return [
        "speed (it/s): iterations per second, one iteration = a forward and a backward pass (gradients of the "
        f"weights and the input, no optimiser step) on a batch of {first['batch_size']} images; {how}",
        "max memory (MB): what one such pass adds to the memory in use (GPU: peak allocated above what was "
        "allocated before it; CPU: resident memory added, measured in a fresh process); n/a where not measured",
        "FLOPs/sample: matrix products and convolutions of one image's forward pass (a multiply-add = 2 FLOPs)",
    ]

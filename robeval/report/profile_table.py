"""``robeval profile``'s table as a document (what each figure is: docs/speed.md, "The efficiency table: robeval profile");
the measurements themselves are its values (``-f csv``)."""

from __future__ import annotations

import pandas as pd

from .document import Document, Paragraph, Table, Values

# (head, column, digits, the column of its spread in %)
CELLS = (
    ("params (M)", "params_M", 2, None),
    ("GFLOPs / image", "gflops_per_image", 3, None),
    ("forward img/s", "forward_img_s", 1, "forward_spread_%"),
    ("fwd+bwd img/s", "forward_backward_img_s", 1, "forward_backward_spread_%"),
    ("memory of a fwd+bwd pass (MB)", "pass_memory_MB", 1, None),
)


def _cell(r: pd.Series, col: str, digits: int, spread_col: str | None, baseline: bool) -> str:
    """A measure as printed: n/a when not measured, its spread, its change against the baseline."""
    value, change = r[col], r[f"{col}_change_%"]
    if value is None or pd.isna(value):
        return "n/a"
    text = f"{value:,.{digits}f}" + (f" ±{r[spread_col] / 2:.0f}%" if spread_col is not None else "")
    return text if baseline or change is None or pd.isna(change) else f"{text} ({change:+.1f}%)"


def profile_document(df: pd.DataFrame) -> Document:
    """The profile of :func:`robeval.evaluation.profiling.profile` as ``robeval profile`` prints it: its
    heading (what was timed, and how), its table, and the measurements as they are."""
    first = df.iloc[0]
    heading = (
        f"Efficiency (batch {first['batch_size']}, {first['device']}; median of {first['repeats']} "
        f"interleaved repeats ± half their range; change vs {first['model']})"
    )
    rows = [
        [r["model"], *(_cell(r, col, digits, spread, i == 0) for _, col, digits, spread in CELLS)]
        for i, (_, r) in enumerate(df.iterrows())
    ]
    return [Paragraph(heading), Table(["model", *(head for head, *_ in CELLS)], rows), Values(df)]

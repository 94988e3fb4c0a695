"""What is said under every results table: skipped files, stopped models, adaptive gaps, soundness
flags, as lines (``robeval run`` and ``robeval check`` print them; ``open_run(...).check()`` returns them)."""

from __future__ import annotations

from typing import Any

import pandas as pd


def diagnostic_lines(run: dict[str, Any], summary: pd.DataFrame) -> list[str]:
    """Skipped files, stopped models, adaptive gaps and soundness flags of a run (its run.json facts and summary)."""
    from ..results.flags import adaptive_gaps
    from .files import skipped_note

    note = skipped_note(run)
    lines = [note] if note else []
    lines += [f"Stopped model {model}: {message}" for model, message in run.get("failed_models", {}).items()]
    gaps = adaptive_gaps(summary)
    if not gaps.empty:
        lines.append("Adaptive attack (gradients through M) vs default:")
        lines += [
            f"  {r.model} eps {r.eps} {r.attack}: top-1 {r.top1_default:.2f} -> {r.top1_adaptive:.2f} (gap {r.gap:+.2f})"
            for r in gaps.itertuples()
        ]
    return lines + _flag_lines(run.get("flags", []), summary, adaptive=not gaps.empty)


def _flag_lines(flags: list[dict[str, Any]], summary: pd.DataFrame, adaptive: bool) -> list[str]:
    if flags:
        return [f"Soundness checks: {len(flags)} flag(s)"] + [
            f"  [{f['check']}] {f['model']}: {f['message']} — {f['advice']}" for f in flags
        ]
    fp32 = "fp32_checked" in summary and summary["fp32_checked"].gt(0).any()
    return [
        "Soundness checks: no flags (randomness, softmax outputs, zero gradients, black-box vs "
        "white-box, transfer vs white-box, eps monotonicity, minimum-norm vs fixed-eps"
        + (", adaptive gap" if adaptive else "")
        + (", reduced precision vs fp32" if fp32 else "")
        + ")"
    ]

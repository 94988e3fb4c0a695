"""What is said under every results table: skipped files, stopped models, adaptive gaps, soundness
flags, as lines (``robeval run`` and ``robeval check`` print them; ``open_run(...).check()`` returns them)."""

from __future__ import annotations

from typing import Any

import pandas as pd


def diagnostic_lines(run: dict[str, Any], summary: pd.DataFrame) -> list[str]:
    """Skipped files, stopped models, adaptive gaps and soundness flags of a run (its run.json facts and summary)."""
    from ..results.checks import adaptive_gaps
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
    return lines + _flag_lines(run.get("flags", []))


def _flag_lines(flags: list[dict[str, Any]]) -> list[str]:
    if flags:
        return [f"Soundness checks: {len(flags)} flag(s)"] + [
            f"  [{f['check']}] {f['model']}: {f['message']} — {f['advice']}" for f in flags
        ]
    return ["Soundness checks: no flags (robeval check RUN --report FILE: every check with its evidence)"]

"""What is printed under every results table: skipped files, stopped models, adaptive gaps, soundness flags."""

from __future__ import annotations

from .app import console


def print_diagnostics(run: dict, summary) -> None:
    """Skipped files, stopped models, soundness flags and adaptive gaps: printed under every table."""
    from ..report.files import skipped_note
    from ..results.flags import adaptive_gaps

    note = skipped_note(run)
    if note:
        console.print(note, markup=False, soft_wrap=True)
    for model, message in run.get("failed_models", {}).items():
        console.print(f"Stopped model {model}: {message}", markup=False)
    gaps = adaptive_gaps(summary)
    if not gaps.empty:
        console.print("Adaptive attack (gradients through M) vs default:", markup=False)
        for r in gaps.itertuples():
            console.print(
                f"  {r.model} eps {r.eps} {r.attack}: top-1 {r.top1_default:.2f} -> {r.top1_adaptive:.2f} "
                f"(gap {r.gap:+.2f})",
                markup=False,
            )
    flags = run.get("flags", [])
    if flags:
        console.print(f"Soundness checks: {len(flags)} flag(s)", markup=False)
        for f in flags:
            console.print(
                f"  [{f['check']}] {f['model']}: {f['message']} — {f['advice']}", markup=False, soft_wrap=True
            )
    else:
        console.print(
            "Soundness checks: no flags (randomness, softmax outputs, zero gradients, black-box vs "
            "white-box, transfer vs white-box, eps monotonicity, minimum-norm vs fixed-eps"
            + (", adaptive gap" if not gaps.empty else "")
            + (
                ", reduced precision vs fp32"
                if "fp32_checked" in summary and summary["fp32_checked"].gt(0).any()
                else ""
            )
            + ")",
            markup=False,
        )

"""The convergence figure, in the paper style of :mod:`.style`: robust top-1 against each attack's
iterations or queries, a panel per attack and eps, a line per model (its colour, marker and line style
of the table's ``order`` of models, as in every other figure: :func:`.style.model_looks`), the legend
below the axes.  The last tenth of each budget, where the noise test of
robeval.results.convergence looks, is shaded.  Built from :func:`robeval.results.convergence.curves`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ..results.convergence import LAST_TENTH
from . import style
from .naming import attack_title, ordered_attacks

STEM = "robust_top1_vs_iterations"


def _panels(curves: pd.DataFrame) -> list[tuple[str, str]]:
    """(attack, eps) in table order: the attacks as tables order them, each at every eps it has."""
    eps_order = list(dict.fromkeys(curves["eps"]))
    have = set(zip(curves["attack"], curves["eps"]))
    return [(a, e) for a in ordered_attacks(curves) for e in eps_order if (a, e) in have]


def _panel(ax, curves: pd.DataFrame, attack: str, eps: str, looks: dict[str, dict], title: str) -> None:
    rows = curves[(curves["attack"] == attack) & (curves["eps"] == eps)]
    for model, look in looks.items():
        line = rows[rows["model"] == model].sort_values("point")
        if len(line):
            ax.plot(line["position"], line["robust_top1"], label=model, markersize=3.5, linewidth=1.1, **look)
    end = float(rows["position"].max())
    start = float(rows.loc[rows["point"] == LAST_TENTH, "position"].max())
    ax.axvspan(start, end, color="0.88", zorder=0, linewidth=0)
    ax.set_title(title)
    ax.set_xlabel(f"{rows['axis'].iloc[0]} ({rows['setting'].iloc[0]})")


@style.drawn
def convergence_figure(curves: pd.DataFrame, order: Iterable[str] = ()):
    """Robust top-1 (%) against iterations or queries; None when ``curves`` is empty."""
    if curves.empty:
        return None
    panels, looks = _panels(curves), style.model_looks(curves["model"], order)
    one_eps = curves["eps"].nunique() == 1
    fig, axes = style.figure(2.2, len(panels), "robust top-1 (%)")
    for ax, (attack, eps) in zip(axes, panels):
        _panel(ax, curves, attack, eps, looks, attack_title(attack) + ("" if one_eps else f"\neps {eps}"))
    at = f", eps {curves['eps'].iloc[0]}" if one_eps else ""
    fig.suptitle(f"Robust top-1 along each attack's budget{at}\n(shaded: its last tenth, where convergence is judged)")
    style.legend_below(fig, axes)
    return fig


def convergence_svg(curves: pd.DataFrame, order: Iterable[str] = ()) -> str | None:
    """The figure as an SVG document (for inlining in HTML); None when there is no curve."""
    fig = convergence_figure(curves, order)
    return None if fig is None else style.svg_text(fig)


def write_convergence_plots(curves: pd.DataFrame, out: Path, order: Iterable[str] = ()) -> list[Path]:
    """The figure as PNG, SVG and PDF in ``out`` (nothing when there is no curve)."""
    fig = convergence_figure(curves, order)
    return [] if fig is None else style.save(fig, out, STEM)

"""The convergence figure: robust top-1 against each attack's iterations or queries, a panel per
attack and eps, a line per model (its own colour, marker and line style), the legend below the axes.
The last tenth of each budget, where the noise test of robeval.results.convergence looks, is shaded.

:func:`convergence_figure` builds it from :func:`robeval.results.convergence.curves` (None when the
runs have no curve), :func:`convergence_svg` gives it as an SVG document for a page to inline, and
:func:`write_convergence_plots` writes it as PNG and SVG next to the other figures.
"""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from ..results.convergence import LAST_TENTH  # noqa: E402
from .naming import attack_title, ordered_attacks  # noqa: E402

STEM = "robust_top1_vs_iterations"
WIDTH, PANEL_HEIGHT, DPI = 7.0, 2.3, 200  # inches, inches, PNG dots per inch
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
LINESTYLES = ("-", "--", "-.", ":")
COLORS = plt.get_cmap("tab10").colors  # type: ignore[attr-defined]  # a ListedColormap


def model_look(index: int) -> dict:
    """The ``index``-th model's colour, marker and line style (distinct for 40 models)."""
    return dict(
        color=COLORS[index % len(COLORS)],
        marker=MARKERS[index % len(MARKERS)],
        linestyle=LINESTYLES[(index // len(MARKERS)) % len(LINESTYLES)],
    )


def _panels(curves: pd.DataFrame) -> list[tuple[str, str]]:
    """(attack, eps) in table order: the attacks as tables order them, each at every eps it has."""
    eps_order = list(dict.fromkeys(curves["eps"]))
    have = set(zip(curves["attack"], curves["eps"]))
    return [(a, e) for a in ordered_attacks(curves) for e in eps_order if (a, e) in have]


def _panel(ax, curves: pd.DataFrame, attack: str, eps: str, models: list[str]) -> None:
    rows = curves[(curves["attack"] == attack) & (curves["eps"] == eps)]
    for i, model in enumerate(models):
        line = rows[rows["model"] == model].sort_values("point")
        if len(line):
            ax.plot(line["position"], line["robust_top1"], label=model, markersize=3.5, linewidth=1.1,
                    **model_look(i))  # fmt: skip
    end = float(rows["position"].max())
    start = float(rows.loc[rows["point"] == LAST_TENTH, "position"].max())
    ax.axvspan(start, end, color="0.85", zorder=0, linewidth=0)
    ax.set_title(f"{attack_title(attack)}, eps {eps}")
    ax.set_xlabel(f"{rows['axis'].iloc[0]} ({rows['setting'].iloc[0]})")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)


def convergence_figure(curves: pd.DataFrame):
    """Robust top-1 (%) against iterations or queries; None when ``curves`` is empty."""
    if curves.empty:
        return None
    panels, models = _panels(curves), list(dict.fromkeys(curves["model"]))
    cols = min(4, len(panels))
    rows = (len(panels) + cols - 1) // cols
    legend = 0.2 + 0.17 * ((len(models) + 3) // 4)  # inches below the axes
    height = PANEL_HEIGHT * rows + 0.3 + legend
    with plt.rc_context({"font.size": 8, "axes.titlesize": 9, "legend.fontsize": 7}):
        fig, axes = plt.subplots(rows, cols, figsize=(WIDTH, height), squeeze=False, sharey=True)
        for ax, (attack, eps) in zip(axes.flat, panels):
            _panel(ax, curves, attack, eps, models)
        for ax in axes.flat[len(panels) :]:
            ax.remove()
        for ax in axes[:, 0]:
            ax.set_ylabel("robust top-1 (%)")
        handles = {label: h for ax in axes.flat[: len(panels)] for h, label in zip(*ax.get_legend_handles_labels())}
        fig.suptitle("Robust top-1 along each attack's budget (shaded: the last tenth, where convergence is judged)")
        fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=min(4, len(handles)), frameon=False)
        fig.tight_layout(rect=(0, legend / height, 1, 1))
    return fig


def convergence_svg(curves: pd.DataFrame) -> str | None:
    """The figure as an SVG document (for inlining in HTML); None when there is no curve."""
    fig = convergence_figure(curves)
    if fig is None:
        return None
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg")
    plt.close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def write_convergence_plots(curves: pd.DataFrame, out: Path) -> list[Path]:
    """The figure as PNG and SVG in ``out`` (nothing when there is no curve)."""
    fig = convergence_figure(curves)
    if fig is None:
        return []
    paths = [out / f"{STEM}.png", out / f"{STEM}.svg"]
    fig.savefig(paths[0], dpi=DPI)
    fig.savefig(paths[1])
    plt.close(fig)
    return paths

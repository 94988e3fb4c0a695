"""How robeval's figures look, in one place (docs/results.md, "``robeval plot``"): 8 pt text at a
two-column paper's text width reads at print size.  Text is shown as written (:data:`LITERAL_TEXT`).
"""

from __future__ import annotations

import functools
import io
import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..results.statistics import binomial_interval  # noqa: E402

FULL_WIDTH = 7.0  # inches: a two-column paper's text width
FONT_SIZE = 8
PNG_DPI = 200
FORMATS = ("png", "svg", "pdf")

# Figure text is shown as it is written, never parsed: model names, labels, attack names, eps, run ids,
# data and class names come from users and from stores, and matplotlib would read "$...$" in them as
# mathtext (failing on "$\x$") or all of it as TeX.  Escaping each "$" instead would hold only while
# mathtext is on and TeX off (a matplotlibrc may change either) and only where every caller escapes;
# robeval's own figure text needs no math (it writes "L∞" as a character).  matplotlib reads these when a
# text is made, so a figure is built in the style (:func:`drawn`), not only saved in it.
LITERAL_TEXT: dict[str, Any] = {"text.parse_math": False, "text.usetex": False}

RC: dict[str, Any] = {
    **LITERAL_TEXT,
    "font.size": FONT_SIZE,
    "axes.titlesize": FONT_SIZE + 1,
    "axes.labelsize": FONT_SIZE,
    "xtick.labelsize": FONT_SIZE - 1,
    "ytick.labelsize": FONT_SIZE - 1,
    "legend.fontsize": FONT_SIZE - 1,
    "figure.titlesize": FONT_SIZE + 1,
    "svg.fonttype": "none",  # text stays text in SVG (searchable, scalable)
    "pdf.fonttype": 42,  # TrueType in PDF: the fonts journals accept
    "axes.grid": True,
    "grid.alpha": 0.3,
}

# tab20's dark shades first, then the light ones: the first ten are tab10's distinct colours, the next
# ten their light partners, which the marker and the line style (cycles of 10 and 4) still tell apart.
_TAB20 = plt.get_cmap("tab20").colors  # type: ignore[attr-defined]  # a ListedColormap
PALETTE = [_TAB20[i] for i in range(0, 20, 2)] + [_TAB20[i] for i in range(1, 20, 2)]
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
LINESTYLES = ("-", "--", "-.", ":")


def paper_style():
    """A context in which matplotlib draws with :data:`RC`."""
    return plt.rc_context(RC)  # type: ignore[arg-type]  # matplotlib types the keys as a Literal union


P = ParamSpec("P")
T = TypeVar("T")


def drawn(build: Callable[P, T]) -> Callable[P, T]:
    """A figure builder that makes its figure in the paper style, so that every text in it is literal
    (:data:`LITERAL_TEXT`); every builder of robeval's figures is one."""

    @functools.wraps(build)
    def in_style(*args: P.args, **kwargs: P.kwargs) -> T:
        with paper_style():
            return build(*args, **kwargs)

    return in_style


def model_style(index: int) -> dict[str, Any]:
    """The colour, marker and line style of the ``index``-th model of a figure (distinct up to 40)."""
    return dict(
        color=PALETTE[index % len(PALETTE)],
        marker=MARKERS[index % len(MARKERS)],
        linestyle=LINESTYLES[(index // len(MARKERS)) % len(LINESTYLES)],
    )


def model_looks(shown: Iterable[str], order: Iterable[str] = ()) -> dict[str, dict[str, Any]]:
    """Each model a figure shows with its look (:func:`model_style`) by its place in ``order``, the models
    of the table the figure is drawn from (its summary's ``model`` column, labels as the table gives them):
    so a model has one look in every figure of a page or a plot folder, whichever of the models each figure
    has; a model not in ``order`` comes after them."""
    ranked = list(dict.fromkeys([*order, *shown]))
    return {model: model_style(ranked.index(model)) for model in dict.fromkeys(shown)}


def interval_bars(rows: Any, metric: str) -> np.ndarray:
    """``yerr`` for a figure's rows: a model of several members the 95% interval of its mean for seeds and
    examples together (the summary's ``<metric>_low`` / ``_high``: the claim test's two levels), a model of
    one checkpoint the bootstrap over examples (robeval.results.statistics.binomial_interval)."""
    values = rows[metric].astype(float).to_numpy()
    known = np.nan_to_num(values)
    bounds = np.array([binomial_interval(float(v), int(n)) for v, n in zip(known, rows["n"].fillna(0))]).reshape(-1, 2)
    yerr = np.maximum(0.0, [known - bounds[:, 0], bounds[:, 1] - known])
    if f"{metric}_low" in rows:
        low, high = (rows[f"{metric}_{end}"].astype(float).to_numpy() for end in ("low", "high"))
        two_level = ~np.isnan(low)
        yerr[0][two_level] = np.maximum(0.0, values - low)[two_level]
        yerr[1][two_level] = np.maximum(0.0, high - values)[two_level]
    return yerr


def has_members(summary: Any) -> bool:
    return "members" in summary and bool((summary["members"].fillna(1) > 1).any())


def label_intervals(ax, summary: Any) -> None:
    """A legend entry that says what the figure's error bars cover (an empty grey bar)."""
    text = (
        "95%: seeds + examples (dots: members); examples (one checkpoint)"
        if has_members(summary)
        else "95% bootstrap over the examples"
    )
    ax.errorbar([], [], yerr=[], color="0.4", capsize=2, label=text)


def interval_note(summary: Any) -> str:
    """What a figure's error bars (and dots) cover, as its caption says it."""
    if not has_members(summary):
        return "error bars: 95% bootstrap intervals over the examples (each model one checkpoint)"
    return (
        "error bars: a model of several members (checkpoints, one per seed): 95% interval of its mean for seeds "
        "and examples together, as robeval compare's claim test counts them, its members' own values as dots; a "
        "model of one checkpoint: 95% bootstrap over the examples"
    )


def figure(height: float, panels: int = 1, ylabel: str = ""):
    """A full-width figure of ``panels`` axes side by side (wrapped at 4 per row), in the paper style,
    sharing their y axis (accuracy in percent, 0 to 100; ``ylabel`` at the start of each row)."""
    with paper_style():
        cols = min(4, max(1, panels))
        rows = (panels + cols - 1) // cols
        fig, axes = plt.subplots(rows, cols, figsize=(FULL_WIDTH, height * rows), squeeze=False, sharey=True)
    for ax in axes.flat[panels:]:
        ax.remove()
    for ax in axes[:, 0]:
        ax.set_ylabel(ylabel)
    axes.flat[0].set_ylim(0, 100)
    return fig, list(axes.flat[:panels])


def legend_below(fig, axes: list) -> None:
    """One legend for the whole figure (each label of the axes once), below the axes (never over the
    data), in as many columns as fit."""
    handles = {label: handle for ax in axes for handle, label in zip(*ax.get_legend_handles_labels())}
    if not handles:
        fig.tight_layout()
        return
    labels = list(handles)
    with paper_style():
        columns = max(1, min(len(labels), 4 if max(len(lab) for lab in labels) < 26 else 2))
        legend_height = 0.17 * math.ceil(len(labels) / columns) + 0.05  # inches
        width, height = fig.get_size_inches()
        fig.set_size_inches(width, height + legend_height)
        fig.legend(list(handles.values()), labels, loc="lower center", ncol=columns, frameon=False)
        fig.tight_layout(rect=(0, legend_height / (height + legend_height), 1, 1))


def save(fig, out: Path, stem: str) -> list[Path]:
    """``stem`` as PNG, SVG and PDF in ``out``; the figure is closed."""
    paths = [out / f"{stem}.{fmt}" for fmt in FORMATS]
    with paper_style():
        for path in paths:
            fig.savefig(path, dpi=PNG_DPI if path.suffix == ".png" else None)
    plt.close(fig)
    return paths


def svg_text(fig) -> str:
    """The figure as an SVG document (for inlining in HTML); the figure is closed."""
    buffer = io.StringIO()
    with paper_style():
        fig.savefig(buffer, format="svg")
    plt.close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg") :]

"""Figures from stored runs (docs/results.md, "``robeval plot``"), in the style of :mod:`.style`, with 95%
intervals as error bars (a model of several members: for seeds and examples together, its members as
dots; one checkpoint: the bootstrap over examples; each figure says which: :func:`.style.interval_note`).
Each builder takes ``order``, the models of the whole table (:func:`.style.model_looks`), so a model looks
the same in every figure."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.defaults import CLEAN
from ..core.eps import eps_label
from ..results.convergence import LAST_TENTH
from ..results.indicators import attacks_of_kind
from ..shifts.catalog import FAMILY_OF, SEVERITIES
from . import style
from .naming import attack_title, is_condition, is_incomplete, ordered_attacks
from .shift_table import minimum_norm_attacks, split


def marked(title: str, summary: pd.DataFrame) -> str:
    """A figure's title, marked when the runs behind it did not finish or rows lack batches."""
    return f"{title}\nINCOMPLETE: see robeval table" if is_incomplete(summary) else title


def _models(summary: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(summary["model"]))


def _informative(summary: pd.DataFrame, attack: str, metric: str) -> bool:
    """Whether a panel tells something: some model's accuracy moves between its clean value and the
    attack's eps (a panel of flat lines does not), and top-5 is no minimum-norm attack's (those stop at
    the top-1 decision boundary, so their top-5 is no attack's)."""
    if metric == "top5" and attack in minimum_norm_attacks(summary):
        return False
    rows = summary[summary["attack"].isin([attack, CLEAN])]
    return bool((rows.groupby("model")[metric].nunique() > 1).any())


def _lower_limit(values: pd.Series) -> float:
    """The y axis starts at the tens below the lowest value (0 when values reach down there)."""
    low = float(values.min()) if len(values) else 0.0
    return max(0.0, 10.0 * ((low - 2.0) // 10.0))


def _line(ax, x: pd.Series, rows: pd.DataFrame, metric: str, model: str, look: dict) -> None:
    """A model's line with its 95% intervals (:func:`.style.interval_bars`) and, for a model of several
    members, each member's value as a dot, in the model's colour, marker and line style (``look``)."""
    ax.errorbar(x, rows[metric], yerr=style.interval_bars(rows, metric), capsize=2, markersize=4, linewidth=1.2,
                label=model, **look)  # fmt: skip
    _member_dots(ax, list(x), rows, metric, look["color"])


def _member_dots(ax, x: list[float], rows: pd.DataFrame, metric: str, color) -> None:
    """Each member's own value (the summary's ``member_<metric>`` lists) as a small dot at its row's x."""
    if f"member_{metric}" not in rows:
        return
    for position, values in zip(x, rows[f"member_{metric}"]):
        if isinstance(values, list | tuple) and len(values) > 1:
            ax.plot([position] * len(values), values, ls="", marker=".", markersize=3, alpha=0.7, color=color)


def _eps_panel(ax, summary: pd.DataFrame, attack: str, metric: str, looks: dict[str, dict]) -> None:
    scale = 255.0 if summary["norm"].iloc[0] == "Linf" else 1.0
    for model, look in looks.items():
        sel = summary[(summary["model"] == model) & (summary["attack"] == attack)].sort_values("eps_value")
        clean = summary[(summary["model"] == model) & (summary["attack"] == CLEAN)].head(1)
        sel = pd.concat([clean.assign(eps_value=0.0), sel]) if len(sel) else sel
        _line(ax, sel["eps_value"] * scale, sel, metric, model, look)
    ax.set_title(attack_title(attack))
    ticks = [0.0, *sorted(set(summary["eps_value"]))]
    ax.set_xticks([t * scale for t in ticks], [f"{t * scale:g}" for t in ticks])
    ax.set_xlabel("eps (x/255, 0 = clean)" if scale == 255.0 else "eps (L2, 0 = clean)")


@style.drawn
def accuracy_vs_eps(summary: pd.DataFrame, metric: str = "top1", order: Iterable[str] = ()):
    """One panel per attack whose values vary, a line per model from its clean accuracy at eps = 0;
    None for a single-eps run (a curve of one point is no curve)."""
    if summary["eps_value"].nunique() < 2:
        return None
    attacks = [a for a in ordered_attacks(summary) if a != CLEAN and _informative(summary, a, metric)]
    if not attacks:
        return None
    looks, top = style.model_looks(_models(summary), order), "top-1" if metric == "top1" else "top-5"
    fig, axes = style.figure(2.2, len(attacks), f"robust {top} (%)")
    for ax, attack in zip(axes, attacks):
        _eps_panel(ax, summary, attack, metric, looks)
    axes[0].set_ylim(_lower_limit(summary[summary["attack"].isin([*attacks, CLEAN])][metric]), 100)  # (shared)
    style.label_intervals(axes[0], summary)
    protocol = summary["protocol"].iloc[0] if "protocol" in summary else ""
    fig.suptitle(marked(f"Robust {top} accuracy vs eps ({protocol})", summary))
    style.legend_below(fig, axes)
    return fig


@style.drawn
def bars_for_eps(sel: pd.DataFrame, order: Iterable[str] = ()):
    """Models x attacks at one eps: a bar per model in each attack's group, with its interval."""
    attacks, looks = ordered_attacks(sel), style.model_looks(_models(sel), order)
    models, width = list(looks), 0.8 / max(1, len(looks))
    fig, (ax,) = style.figure(2.6, ylabel="top-1 accuracy (%)")
    for i, model in enumerate(models):
        rows = sel[sel["model"] == model].drop_duplicates("attack").set_index("attack").reindex(attacks)  # clean: once
        color, x = looks[model]["color"], [j + i * width for j in range(len(attacks))]
        ax.bar(x, rows["top1"].astype(float).tolist(), width, label=model, color=color,
               yerr=style.interval_bars(rows, "top1"), error_kw=dict(lw=0.6, capsize=1))  # fmt: skip
        _member_dots(ax, x, rows, "top1", "black")
    style.label_intervals(ax, sel)
    ax.set_xticks([j + width * (len(models) - 1) / 2 for j in range(len(attacks))])
    ax.set_xticklabels([attack_title(a) for a in attacks], rotation=30, ha="right")
    ax.set_title(marked(f"Top-1 under attack, eps = {eps_label(float(sel['eps_value'].iloc[0]))}", sel))
    style.legend_below(fig, [ax])
    return fig


@style.drawn
def accuracy_vs_severity(summary: pd.DataFrame, order: Iterable[str] = ()):
    """Top-1 against severity, one panel per corruption family, a line per model (the mean over the
    family's corruptions run), from the model's clean accuracy at severity 0."""
    rows = summary[is_condition(summary)]
    rows = rows[rows["eps"] == rows["eps"].iloc[0]]  # conditions are eps-free: one eps of the shift run
    rows = rows.assign(family=rows["corruption"].map(lambda c: FAMILY_OF.get(c, "other")))
    families, looks = list(dict.fromkeys(rows["family"])), style.model_looks(_models(rows), order)
    fig, axes = style.figure(2.2, len(families))
    for ax, family in zip(axes, families):
        for model, look in looks.items():
            sel = rows[(rows["family"] == family) & (rows["model"] == model)]
            mean = sel.groupby("severity").agg(top1=("top1", "mean"), n=("n", "sum")).reset_index()
            clean = summary[(summary["model"] == model) & (summary["attack"] == CLEAN)].head(1)
            if len(clean):
                mean = pd.concat([clean[["top1", "n"]].assign(severity=0), mean], ignore_index=True)
            _line(ax, mean["severity"], mean, "top1", model, look)
        members = dict.fromkeys(rows[rows["family"] == family]["corruption"])
        ax.set_title(f"{family}: " + ", ".join(c.replace("_", " ") for c in members), fontsize=style.FONT_SIZE - 2)
        ax.set_xticks(range(0, max(SEVERITIES) + 1))
        ax.set_xlim(-0.25, max(SEVERITIES) + 0.25)  # every panel the whole scale, whichever severities ran
        ax.set_xlabel("severity (0 = clean)")
    axes[0].set_ylabel("top-1 (%)")
    style.label_intervals(axes[0], summary)
    fig.suptitle(marked("Top-1 accuracy against corruption severity (mean over each family's corruptions)", summary))
    style.legend_below(fig, axes)
    return fig


def curve(norms: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """Robust top-1 (%) at each eps from the examples' minimal norms: the share of examples whose minimal
    norm exceeds eps (0 for an image already misclassified, ``inf`` where the search found nothing)."""
    norms = np.asarray(norms, dtype=float)
    return 100.0 * (norms[None, :] > np.asarray(eps, dtype=float)[:, None]).mean(axis=1)


@style.drawn
def minimum_norm_curves(summary: pd.DataFrame, norms: pd.DataFrame, order: Iterable[str] = ()):
    """Robust top-1 against eps from each minimum-norm search (a line per model and attack), with the
    run's fixed-eps white-box attacks as points at their eps (same colour and marker per model)."""
    norm = summary["norm"].iloc[0]
    finite = norms["min_norm"][np.isfinite(norms["min_norm"])]
    top = 1.1 * max(float(finite.quantile(0.99)) if len(finite) else 0.0, float(summary["eps_value"].max()))
    grid, scale = np.linspace(0.0, top, 200), 255.0 if norm == "Linf" else 1.0
    fig, (ax,) = style.figure(3.0, ylabel="robust top-1 (%)")
    looks = style.model_looks(norms["model"], [*order, *_models(summary)])  # the colours of the other figures
    searches = list(dict.fromkeys(norms["attack"]))
    white = [a for a in attacks_of_kind(set(summary["attack"]), "white-box") if a not in set(norms["attack"])]
    for (model, attack), rows in norms.groupby(["model", "attack"], sort=False):
        look = looks[model]
        line = look["linestyle"] if len(searches) == 1 else style.LINESTYLES[searches.index(attack) % 4]
        ax.plot(grid * scale, curve(rows["min_norm"], grid), color=look["color"], ls=line,
                label=f"{model}: {attack_title(attack)}")  # fmt: skip
        fixed = summary[(summary["model"] == model) & summary["attack"].isin(white)]
        ax.plot(fixed["eps_value"] * scale, fixed["top1"], marker=look["marker"], ls="", color=look["color"])
    ax.set_xlabel("eps (x/255)" if norm == "Linf" else "eps (L2)")
    title = f"Robust top-1 against {norm} eps from one minimum-norm search\n(lines; markers: the fixed-eps white-box attacks)"
    ax.set_title(marked(title, summary))
    style.legend_below(fig, [ax])
    return fig


def figures(summary: pd.DataFrame, norms: pd.DataFrame | None = None) -> dict[str, object]:
    """Every figure the runs support, by file stem; ``norms`` (per-example minimal norms,
    results.runs.minimal_norms) adds the minimum-norm curve.  Each model has its look of the whole
    ``summary`` (:func:`.style.model_looks`) in each figure."""
    attacks, _ = split(summary)
    found, order = {}, _models(summary)
    if len(attacks):
        found["robust_top1_vs_eps"] = accuracy_vs_eps(attacks, "top1", order)
        found["robust_top5_vs_eps"] = accuracy_vs_eps(attacks, "top5", order)
        for eps in dict.fromkeys(attacks["eps"]):
            safe = eps.replace("/", "_").replace(".", "p")
            found[f"bars_eps_{safe}"] = bars_for_eps(attacks[attacks["eps"] == eps], order)
    if norms is not None and len(norms) and len(attacks):
        found["robust_top1_vs_min_norm"] = minimum_norm_curves(attacks, norms, order)
    if is_condition(summary).any():
        found["accuracy_vs_severity"] = accuracy_vs_severity(summary, order)
    return {stem: fig for stem, fig in found.items() if fig is not None}


CONVERGENCE_STEM = "robust_top1_vs_iterations"


def _convergence_panel(ax, curves: pd.DataFrame, attack: str, eps: str, looks: dict[str, dict], title: str) -> None:
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
    """The convergence figure: robust top-1 (%) against each attack's iterations or queries
    (robeval.results.convergence.curves), a panel per attack and eps, a line per model, the last tenth of
    each budget (where the noise test of robeval.results.convergence looks) shaded; None when ``curves``
    is empty."""
    if curves.empty:
        return None
    eps_order, have = list(dict.fromkeys(curves["eps"])), set(zip(curves["attack"], curves["eps"]))
    panels = [(a, e) for a in ordered_attacks(curves) for e in eps_order if (a, e) in have]  # in table order
    looks = style.model_looks(curves["model"], order)
    one_eps = curves["eps"].nunique() == 1
    fig, axes = style.figure(2.2, len(panels), "robust top-1 (%)")
    for ax, (attack, eps) in zip(axes, panels):
        _convergence_panel(ax, curves, attack, eps, looks, attack_title(attack) + ("" if one_eps else f"\neps {eps}"))
    at = f", eps {curves['eps'].iloc[0]}" if one_eps else ""
    fig.suptitle(f"Robust top-1 along each attack's budget{at}\n(shaded: its last tenth, where convergence is judged)")
    style.legend_below(fig, axes)
    return fig


def make_plots(
    summary: pd.DataFrame, out: Path, norms: pd.DataFrame | None = None, curves: pd.DataFrame | None = None
) -> list[Path]:
    """Every figure of :func:`figures` as PNG, SVG and PDF in ``out``, and the convergence figure of
    ``curves`` where there are any (its models in the table's colours)."""
    out.mkdir(parents=True, exist_ok=True)
    found = figures(summary, norms)
    if curves is not None and (convergence := convergence_figure(curves, summary["model"])) is not None:
        found[CONVERGENCE_STEM] = convergence
    return [path for stem, fig in found.items() for path in style.save(fig, out, stem)]

"""Figures from stored runs: robust accuracy against eps (one panel per attack, one line per model)
and a grouped bar chart per eps (models x attacks).  PNG and SVG, non-interactive backend."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ..defaults import CLEAN
from ..eps import eps_label  # noqa: E402
from .captions import is_incomplete  # noqa: E402
from .naming import attack_title, ordered_attacks  # noqa: E402

DPI = 100


def _save(fig, out: Path, stem: str) -> list[Path]:
    paths = [out / f"{stem}.png", out / f"{stem}.svg"]
    fig.savefig(paths[0], dpi=DPI, bbox_inches=None)
    fig.savefig(paths[1])
    plt.close(fig)
    return paths


def marked(title: str, summary: pd.DataFrame) -> str:
    """A figure's title, marked when the runs behind it did not finish or rows lack batches."""
    return f"{title}\nINCOMPLETE: see robeval table" if is_incomplete(summary) else title


def accuracy_vs_eps(summary: pd.DataFrame, out: Path, metric: str = "top1") -> list[Path]:
    attacks = [a for a in ordered_attacks(summary) if a != CLEAN]
    cols = min(4, max(1, len(attacks)))
    rows = (len(attacks) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.2 * rows), squeeze=False, sharey=True)
    eps_values = sorted(set(summary["eps_value"]))
    for ax, attack in zip(axes.flat, attacks):
        for model in dict.fromkeys(summary["model"]):
            sel = summary[(summary["model"] == model) & (summary["attack"] == attack)].sort_values("eps_value")
            ax.plot(sel["eps_value"], sel[metric], marker="o", label=model)
        ax.set_title(attack_title(attack))
        ax.set_xticks(eps_values)
        ax.set_xticklabels([eps_label(v) for v in eps_values], rotation=45, ha="right")
        ax.set_xlabel("eps")
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(attacks) :]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel(f"robust {'top-1' if metric == 'top1' else 'top-5'} (%)")
    axes.flat[0].legend(fontsize=8)
    protocol = summary["protocol"].iloc[0] if "protocol" in summary else ""
    fig.suptitle(marked(f"Robust {'top-1' if metric == 'top1' else 'top-5'} accuracy vs eps ({protocol})", summary))
    fig.tight_layout()
    return _save(fig, out, f"robust_{metric}_vs_eps")


def bars_per_eps(summary: pd.DataFrame, out: Path) -> list[Path]:
    paths = []
    for eps in dict.fromkeys(summary["eps"]):
        sel = summary[summary["eps"] == eps]
        attacks = ordered_attacks(sel)
        models = list(dict.fromkeys(sel["model"]))
        width = 0.8 / max(1, len(models))
        fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(attacks) + 2), 4))
        for i, model in enumerate(models):
            vals = [
                float(sel[(sel["model"] == model) & (sel["attack"] == a)]["top1"].iloc[0])
                if len(sel[(sel["model"] == model) & (sel["attack"] == a)])
                else 0.0
                for a in attacks
            ]
            ax.bar([j + i * width for j in range(len(attacks))], vals, width, label=model)
        ax.set_xticks([j + width * (len(models) - 1) / 2 for j in range(len(attacks))])
        ax.set_xticklabels([attack_title(a) for a in attacks], rotation=30, ha="right")
        ax.set_ylabel("top-1 accuracy (%)")
        ax.set_ylim(0, 100)
        ax.set_title(marked(f"Top-1 under attack, eps = {eps_label(float(sel['eps_value'].iloc[0]))}", sel))
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        safe = eps.replace("/", "_").replace(".", "p")
        paths += _save(fig, out, f"bars_eps_{safe}")
    return paths


def accuracy_vs_severity(summary: pd.DataFrame, out: Path) -> list[Path]:
    """Top-1 against severity, one panel per corruption family, one line per (model, corruption);
    the model's clean accuracy at severity 0."""
    from ..shifts.catalog import FAMILIES, FAMILY_OF, parse_condition

    rows = summary[summary["eps"] == summary["eps"].iloc[0]]
    parsed = rows["attack"].map(parse_condition)
    rows = rows[parsed.notna()].assign(
        corruption=parsed.dropna().map(lambda p: p[0]), severity=parsed.dropna().map(lambda p: p[1])
    )
    families = [f for f in FAMILIES if f in set(rows["corruption"].map(FAMILY_OF))]
    fig, axes = plt.subplots(1, len(families), figsize=(4 * len(families), 3.4), squeeze=False, sharey=True)
    for ax, family in zip(axes.flat, families):
        for model in dict.fromkeys(rows["model"]):
            clean = summary[(summary["model"] == model) & (summary["attack"] == CLEAN)]["top1"]
            for corruption in [c for c in FAMILIES[family] if c in set(rows["corruption"])]:
                sel = rows[(rows["model"] == model) & (rows["corruption"] == corruption)].sort_values("severity")
                xs, ys = [0, *sel["severity"]] if len(clean) else list(sel["severity"]), [*clean.iloc[:1], *sel["top1"]]
                ax.plot(xs, ys, marker="o", label=f"{model}: {corruption.replace('_', ' ')}")
        ax.set_title(family)
        ax.set_xlabel("severity (0 = clean)")
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    axes[0, 0].set_ylabel("top-1 (%)")
    fig.suptitle(marked("Top-1 accuracy against corruption severity", summary))
    fig.tight_layout()
    return _save(fig, out, "accuracy_vs_severity")


def minimum_norm_curves(summary: pd.DataFrame, norms: pd.DataFrame, out: Path) -> list[Path]:
    """Robust top-1 against eps from each minimum-norm search (one line per model and attack), with
    the run's fixed-eps white-box attacks as points at their eps (same colour per model)."""
    from ..results.flags import attacks_of_kind
    from .minimum_norm import curve

    norm = summary["norm"].iloc[0]
    finite = norms["min_norm"][np.isfinite(norms["min_norm"])]
    top = 1.1 * max(float(finite.quantile(0.99)) if len(finite) else 0.0, float(summary["eps_value"].max()))
    grid = np.linspace(0.0, top, 200)
    scale = 255.0 if norm == "Linf" else 1.0
    fig, ax = plt.subplots(figsize=(6.5, 4))
    models, searches = list(dict.fromkeys(norms["model"])), list(dict.fromkeys(norms["attack"]))
    for (model, attack), rows in norms.groupby(["model", "attack"], sort=False):
        color = f"C{models.index(model) % 10}"
        ax.plot(
            grid * scale,
            curve(rows["min_norm"], grid),
            color=color,
            ls=["-", "--", ":"][searches.index(attack) % 3],
            label=f"{model}: {attack_title(attack)} (minimum norm)",
        )
        fixed = summary[
            (summary["model"] == model)
            & summary["attack"].isin(
                [a for a in attacks_of_kind(set(summary["attack"]), "white-box") if a not in set(norms["attack"])]
            )
        ]
        for r in fixed.itertuples():
            ax.plot(r.eps_value * scale, r.top1, marker="o", ls="", color=color, alpha=0.7)
    ax.set_xlabel("eps (x/255)" if norm == "Linf" else "eps (L2)")
    ax.set_ylabel("robust top-1 (%)")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(
        marked(f"Robust top-1 against {norm} eps from one minimum-norm run (dots: fixed-eps attacks)", summary),
        fontsize=9,
    )
    fig.tight_layout()
    return _save(fig, out, "robust_top1_vs_min_norm")


def make_plots(summary: pd.DataFrame, out: Path, norms: pd.DataFrame | None = None) -> list[Path]:
    """Every figure the runs support; ``norms`` (per-example minimal norms, report.runs.minimal_norms)
    adds the minimum-norm curve."""
    from .shift_table import is_condition, split

    out.mkdir(parents=True, exist_ok=True)
    attacks, _ = split(summary)
    paths = []
    if len(attacks):
        paths += (
            accuracy_vs_eps(attacks, out, "top1") + accuracy_vs_eps(attacks, out, "top5") + bars_per_eps(attacks, out)
        )
    if norms is not None and len(norms):
        paths += minimum_norm_curves(attacks, norms, out)
    if is_condition(summary).any():
        paths += accuracy_vs_severity(summary, out)
    return paths

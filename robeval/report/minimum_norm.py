"""Minimum-norm attacks in tables and figures: per model the median smallest fooling perturbation and
robust top-1 at each eps of the run (a table block after the attack blocks), and the curve of robust
top-1 against eps that one run gives (``robeval plot``: ``robust_top1_vs_min_norm``).

An example's minimal norm is 0 when its clean image is misclassified and ``inf`` when the search
found nothing, so the curve at eps is the share of examples whose minimal norm exceeds eps.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..attacks import list_attacks
from .naming import attack_title


def minimum_norm_attacks(summary: pd.DataFrame) -> list[str]:
    """The minimum-norm attacks present in ``summary``, in registry order."""
    present = set(summary["attack"])
    return [s.name for s in list_attacks() if s.minimum_norm and s.name in present]


def size_label(value: float, norm: str) -> str:
    """A perturbation size as a table shows it: ``x/255`` in Linf, plain in L2."""
    if not np.isfinite(value):
        return "none found" if value > 0 else ""
    return f"{value * 255:.2f}/255" if norm == "Linf" else f"{value:.3f}"


def curve(norms: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """Robust top-1 (%) at each eps from the examples' minimal norms."""
    norms = np.asarray(norms, dtype=float)
    return 100.0 * (norms[None, :] > np.asarray(eps, dtype=float)[:, None]).mean(axis=1)


def minimum_norm_grid(summary: pd.DataFrame) -> pd.DataFrame | None:
    """Rows = models; per minimum-norm attack its median minimal norm, then top-1 at each eps."""
    attacks = minimum_norm_attacks(summary)
    if not attacks:
        return None
    rows: dict[str, dict[str, str]] = {}
    for r in summary[summary["attack"].isin(attacks)].itertuples():
        cells = rows.setdefault(r.model, {})
        cells.setdefault(f"{attack_title(r.attack)} median size", size_label(float(r.median_min_norm), r.norm))
        cells[f"{attack_title(r.attack)} Top-1 @ {r.eps}"] = f"{r.top1:.2f}"
    return pd.DataFrame.from_dict(rows, orient="index").fillna("")


def minimum_norm_caption(summary: pd.DataFrame) -> list[str]:
    """The minimum-norm block's caption, phrase by phrase."""
    sel = summary[summary["attack"].isin(minimum_norm_attacks(summary))]
    return [
        f"Minimum-norm attacks: median smallest {sel['norm'].iloc[0]} perturbation that changes the top-1 decision "
        "(0 for an image already misclassified; 'none found' when over half were not fooled) and robust top-1 (%) "
        "at each eps of the run, read from the same search",
        f"n = {int(sel['n'].max())}",
        "top-5 under these attacks is measured at the decision boundary and is not a top-5 attack",
    ]

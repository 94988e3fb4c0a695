"""Paper-style tables: rows = models, columns = attacks, cells ``top1 / top5``, one block per eps."""

from __future__ import annotations

import pandas as pd

from ..eps import eps_label

from ..defaults import RANDOM_WEIGHTS
from ..robustbench_ext.protocols import get_protocol


def attack_columns(summary: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(summary["attack"]))


def caption(summary: pd.DataFrame, eps: str) -> str:
    """The caption of one eps block, on one line (files, LaTeX)."""
    return "; ".join(caption_parts(summary, eps))


def caption_parts(summary: pd.DataFrame, eps: str) -> list[str]:
    """The caption's phrases: what is measured, the threat model, the data, the protocol."""
    sel = summary[summary["eps"] == eps]
    n = int(sel["n"].max()) if len(sel) else 0
    value = float(sel["eps_value"].iloc[0]) if len(sel) else 0.0
    protocol = sel["protocol"].iloc[0] if "protocol" in sel and len(sel) else "standard"
    data = sel["data"].iloc[0] if "data" in sel and len(sel) else ""
    norm = sel["norm"].iloc[0] if len(sel) else "Linf"
    attacked = len(sel) and set(sel["attack"]) - {"clean"}
    measured = (f"Top-1 / top-5 accuracy (%) under attack, {norm} eps = {eps} ({eps_label(value)}, {value:.6g})"
                if attacked else "Top-1 / top-5 clean accuracy (%)")
    parts = [measured, f"data: {data}, n = {n}", f"protocol: {protocol}"]
    if not get_protocol(protocol).valid_threat_model:
        parts[-1] += " (reproduction of the paper's protocol; eps in normalized units, not a pixel-space threat model)"
    if "checkpoint" in sel and (sel["checkpoint"] == RANDOM_WEIGHTS).any():
        models = ", ".join(dict.fromkeys(sel[sel["checkpoint"] == RANDOM_WEIGHTS]["model"]))
        parts.append(f"RANDOM WEIGHTS (untrained, a smoke test): {models}")
    return parts


def pivot(summary: pd.DataFrame, eps: str) -> pd.DataFrame:
    """Models x attacks of ``"top1 / top5"`` strings for one eps."""
    sel = summary[summary["eps"] == eps]
    attacks = attack_columns(sel)
    rows = {}
    for model in dict.fromkeys(sel["model"]):
        cells = {}
        for attack in attacks:
            hit = sel[(sel["model"] == model) & (sel["attack"] == attack)]
            cells[attack] = f"{hit['top1'].iloc[0]:.2f} / {hit['top5'].iloc[0]:.2f}" if len(hit) else ""
        rows[model] = cells
    table = pd.DataFrame.from_dict(rows, orient="index", columns=attacks)
    table.index.name = "model"
    return table

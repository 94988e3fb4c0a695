"""The claim test's rows and words: "attention B is more robust than attention A", made from models with
several members (checkpoints, one per training seed) evaluated on the same examples.  The statistics
(the difference of the means and its interval for seeds and examples together) are
robeval.results.statistics'; here each (eps, attack) becomes a row of ``robeval compare`` and a verdict.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..core.defaults import ANY
from ..results.statistics import claim_interval, excludes_zero, member_matrix
from .document import Document, compared_head, comparison_blocks
from .grid import Measured


def claim_row(ra: pd.DataFrame, rb: pd.DataFrame, eps: str, attack: str) -> dict:
    """Top-1 and top-5 of two models of members on the same examples: each side's mean and sample std
    over members, the difference of the means and its interval (module docstring)."""
    row: dict = {"eps": eps, "attack": attack}
    for metric, column in (("top1", "adv_top1"), ("top5", "adv_top5")):
        (a, examples_a), (b, examples_b) = member_matrix(ra, column), member_matrix(rb, column)
        assert examples_a == examples_b, "the caller pairs the examples"
        found = claim_interval(a, b)
        for side, values in (("a", a), ("b", b)):
            means = 100.0 * values.mean(axis=1)
            row[f"{metric}_{side}"] = round(float(means.mean()), 2)
            row[f"{metric}_{side}_std"] = round(float(np.std(means, ddof=1)), 2) if len(means) > 1 else math.nan
        row.update({f"{metric}_{k}": round(v, 4 if k == "df" else 2) for k, v in found.items()})
        row[f"{metric}_beyond"] = excludes_zero(found["low"], found["high"])
    row.update(n=len(examples_a), members_a=len(a), members_b=len(b))
    return row


def verdict(row: dict, a: str, b: str, metric: str = "top1") -> str:
    """The claim in words for one row: whether B - A exceeds the seed-to-seed variation."""
    diff, low, high = row[f"{metric}_diff"], row[f"{metric}_low"], row[f"{metric}_high"]
    stds = " and ".join(f"{s:.2f}" for s in (row[f"{metric}_a_std"], row[f"{metric}_b_std"]) if not math.isnan(s))
    where = f"{row['attack']} at eps {row['eps']}"
    head = f"{where}: {b} - {a} = {diff:+.2f} points, 95% interval [{low:+.2f}, {high:+.2f}]"
    spread = f"the seed-to-seed variation (member std {stds} points) and the sampling of the examples"
    if row[f"{metric}_beyond"]:
        return f"{head}: the difference exceeds {spread}: {b if diff > 0 else a} is more robust here."
    return f"{head}: within {spread}; these runs do not show that either is more robust."


def one_side_note(row: dict, a: str, b: str) -> str | None:
    """What the verdict assumes when one side has a single member."""
    single = [name for name, k in ((a, row["members_a"]), (b, row["members_b"])) if k == 1]
    if not single:
        return None
    return (
        f"{single[0]} has one checkpoint: its seed-to-seed variation is taken to be the other model's (give it "
        "several members, --checkpoint NAME=A,B,C, to measure its own)."
    )


CLAIM_HEAD = compared_head(("95% interval", "beyond seeds"), ("95% interval",))


def claim_document(result: pd.DataFrame) -> Document:
    """``robeval compare``'s answer for models of several members: the table and the verdicts."""
    a, b = result.attrs.get("a", "A"), result.attrs.get("b", "B")
    heading = (
        f"Comparison of training procedures: A = {a} ({_members(result['members_a'].iloc[0])}), B = {b} "
        f"({_members(result['members_b'].iloc[0])}) (protocol {result.attrs.get('protocol', '')}); cells: mean ± "
        "sample std over members; diff = B - A in points with a 95% interval for seeds and examples together "
        "(Student's t over the members' spread plus the paired sampling of examples: docs/results.md); any = "
        f"the worst case of each member over the attacks both finished ({', '.join(result.attrs.get('any_over', ())) or 'none'})"
    )
    return comparison_blocks(heading, CLAIM_HEAD, "llrrrrllrrrl", result, _claim_cells)


def _claim_cells(r: dict, metric: str) -> list[object]:
    cells = [Measured.of(r, f"{metric}_a"), Measured.of(r, f"{metric}_b"), f"{r[f'{metric}_diff']:+.2f}"]
    cells.append(f"[{r[f'{metric}_low']:+.2f}, {r[f'{metric}_high']:+.2f}]")
    return cells + (["yes" if r["top1_beyond"] else "no"] if metric == "top1" else [])


def _members(k: int) -> str:
    return f"{k} member{'s' if k != 1 else ''}"


def headline(result: pd.DataFrame) -> pd.DataFrame:
    """The rows a verdict is said for: the worst case (``any``) at each eps, else every row."""
    worst = result[result["attack"] == ANY]
    return worst if len(worst) else result

"""The test of a claim about training procedures: "attention B is more robust than attention A", made
from models with several members (checkpoints, one per training seed) evaluated on the same examples.

The difference of the means over members, ``D = mean(B's members) - mean(A's members)`` (percentage
points), varies for two reasons: which seeds were trained, and which examples were drawn.  By the law
of total variance its variance is the seed term plus the example term:

* seed term ``s_A^2 / k_A + s_B^2 / k_B``: the sample variances (n - 1) of the members' accuracies on
  these examples, over ``k`` members each.  With three members a bootstrap over members misses much of
  this spread when seeds vary more than examples do (it resamples 3 values: its variance is
  ``(k - 1) / k`` of the plain estimate, its percentiles come from ten distinct resamples, and its
  quantile is a normal one where Student's t with 2 degrees of freedom is 4.3).  A side of one member
  has no spread of its own: it is taken to vary as the other side does (said in the verdict); with one
  member a side nothing is left to estimate it from and the test is the paired one of :mod:`.compare`.
* example term: the variance of ``d``, each example's difference of the two sides' member-mean
  outcomes (paired on examples), over ``n`` — the variance a paired bootstrap over examples estimates
  (its limit, without Monte Carlo noise) — less each side's residual mean square of its members x
  examples table over its ``k``: a member's own departures on each example are part of the members'
  spread on these examples, which the seed term counts already.

The interval is ``D +- t(0.975, df) * sqrt(seed term + example term)`` with the Welch-Satterthwaite
degrees of freedom of the terms (a side's seed term k - 1, the example term n - 1); the difference
exceeds the seed-to-seed variation (and the sampling of examples) when the interval excludes 0.
docs/results.md reports a simulation of its coverage (tests/test_members.py runs one case).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.stats import t as student_t

from ..defaults import ANY
from .grid import Measured, comparison_table

LEVEL = 0.95


def member_matrix(records: pd.DataFrame, column: str) -> tuple[np.ndarray, list[int]]:
    """One side's outcomes as members x examples (0/1), with the examples in order."""
    table = records.pivot_table(index="member", columns="example", values=column, aggfunc="first")
    return table.to_numpy(dtype=float), [int(e) for e in table.columns]


def seed_terms(a: np.ndarray, b: np.ndarray) -> list[tuple[float, int]]:
    """Each side's seed term of the variance of D (points squared) with its degrees of freedom (the module
    docstring)."""
    means = [100.0 * side.mean(axis=1) for side in (a, b)]
    variances = [float(np.var(m, ddof=1)) if len(m) > 1 else math.nan for m in means]
    known = [v for v in variances if not math.isnan(v)]
    variances = [known[0] if math.isnan(v) else v for v in variances]
    dfs = [len(m) - 1 if len(m) > 1 else len(means[1 - i]) - 1 for i, m in enumerate(means)]
    return [(v / len(m), df) for v, m, df in zip(variances, means, dfs)]


def interaction(side: np.ndarray) -> float:
    """The residual mean square of a side's members x examples outcomes (two-way, no replication); 0 for
    one member."""
    k, n = side.shape
    if k < 2 or n < 2:
        return 0.0
    residual = side - side.mean(axis=1, keepdims=True) - side.mean(axis=0, keepdims=True) + side.mean()
    return float((residual**2).sum()) / ((k - 1) * (n - 1))


def example_term(a: np.ndarray, b: np.ndarray) -> float:
    """The example term of the variance of D (points squared; the module docstring), never below 0."""
    per_example = b.mean(axis=0) - a.mean(axis=0)
    n = len(per_example)
    if n < 2:
        return 0.0
    own = interaction(a) / len(a) + interaction(b) / len(b)
    return 100.0**2 * max(float(np.var(per_example, ddof=1)) - own, 0.0) / n


def claim_interval(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """D, its standard error, degrees of freedom and 95% interval for sides ``a`` and ``b`` (members x
    examples, the same examples in the same order; at least one side with two members)."""
    diff = 100.0 * (b.mean() - a.mean())
    terms = [*seed_terms(a, b), (example_term(a, b), max(a.shape[1] - 1, 1))]
    variance = sum(v for v, _ in terms)
    denominator = sum(v * v / df for v, df in terms)  # Welch-Satterthwaite
    df = variance**2 / denominator if denominator > 0 else math.inf
    se = math.sqrt(variance)
    half = float(student_t.ppf(0.5 + LEVEL / 2, df)) * se if math.isfinite(df) else 1.959964 * se
    return {"diff": diff, "se": se, "df": df, "low": diff - half, "high": diff + half}


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
        row[f"{metric}_beyond"] = bool(found["low"] > 0 or found["high"] < 0)
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


CLAIM_HEAD = "eps | attack | n | A top-1 | B top-1 | diff | 95% interval | beyond seeds | A top-5 | B top-5 | diff | 95% interval"


def claim_markdown(result: pd.DataFrame) -> str:
    """``robeval compare``'s answer for models of several members: the table and the verdicts."""
    a, b = result.attrs.get("a", "A"), result.attrs.get("b", "B")
    heading = (
        f"Comparison of training procedures: A = {a} ({_members(result['members_a'].iloc[0])}), B = {b} "
        f"({_members(result['members_b'].iloc[0])}) (protocol {result.attrs.get('protocol', '')}); cells: mean ± "
        "sample std over members; diff = B - A in points with a 95% interval for seeds and examples together "
        "(Student's t over the members' spread plus the paired sampling of examples: docs/results.md); any = "
        f"the worst case of each member over the attacks both finished ({result.attrs.get('any_over') or 'none'})"
    )
    return comparison_table(heading, CLAIM_HEAD, "llrrrrllrrrl", result, _claim_cells)


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

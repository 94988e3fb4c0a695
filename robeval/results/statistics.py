"""Every test and interval a comparison, a table's bold and a figure's error bars rest on.

Models of one checkpoint a side are paired on examples: the difference B - A with a seeded 95% percentile
bootstrap interval and the exact McNemar test on the discordant pairs (two-sided; its one-sided sign test
is the precision check's).  Between models of several members, the claim interval (a seed term plus an
example term, t at the Welch-Satterthwaite degrees of freedom), why not a bootstrap over three members,
and its simulated coverage: docs/results.md, section "`robeval compare`".  A
column's best is bold where the interval excludes 0 against the runner-up (:func:`separates`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

LEVEL = 0.95
BOOTSTRAP_SAMPLES = 2000  # the one resample count: compare's intervals and the figures' error bars


def percentile_interval(draws: np.ndarray) -> tuple[float, float]:
    """The 95% percentile interval of bootstrap draws."""
    low, high = np.percentile(draws, [2.5, 97.5])
    return float(low), float(high)


def bootstrap_mean_ci(values: np.ndarray, seed: int = 0) -> tuple[float, float]:
    """95% percentile interval of mean(values), in percent (points), resampling the examples."""
    draws = np.random.default_rng(seed).integers(0, len(values), size=(BOOTSTRAP_SAMPLES, len(values)))
    return percentile_interval(values.astype(float)[draws].mean(axis=1) * 100.0)


def binomial_interval(accuracy: float, n: int, seed: int = 0) -> tuple[float, float]:
    """The 95% percentile-bootstrap interval of an accuracy (%) over ``n`` examples.

    Resampling the examples' hits with replacement (:func:`bootstrap_mean_ci`) draws the number of hits
    from Binomial(n, p), so a figure, which has the summary and not the records, draws from that
    directly: the same distribution."""
    if n <= 0 or not math.isfinite(accuracy):
        return (accuracy, accuracy)
    hits = np.random.default_rng(seed).binomial(int(n), min(1.0, max(0.0, accuracy / 100.0)), size=BOOTSTRAP_SAMPLES)
    return percentile_interval(hits * (100.0 / n))


def bootstrap_ci(a: np.ndarray, b: np.ndarray, seed: int = 0) -> tuple[float, float]:
    """95% percentile interval of mean(b) - mean(a), in percentage points, resampling paired examples."""
    return bootstrap_mean_ci(b.astype(float) - a.astype(float), seed)


def paired_row(ra: pd.DataFrame, rb: pd.DataFrame, eps: str, attack: str, seed: int) -> dict:
    """``robeval compare``'s row at (eps, attack) for one checkpoint a side, records paired on examples: per
    metric A, B, B - A, its bootstrap interval and McNemar's p."""
    sel = ra.merge(rb, on=["eps", "attack", "example"], suffixes=("_a", "_b"))
    row: dict = {"eps": eps, "attack": attack, "n": len(sel)}
    for metric, col in (("top1", "adv_top1"), ("top5", "adv_top5")):
        a, b = sel[f"{col}_a"].to_numpy(bool), sel[f"{col}_b"].to_numpy(bool)
        ci = dict(zip(("ci_low", "ci_high"), bootstrap_ci(a, b, seed)))
        values = {"a": 100 * a.mean(), "b": 100 * b.mean(), "diff": 100 * (b.mean() - a.mean()), **ci}
        row.update({f"{metric}_{k}": round(v, 2) for k, v in values.items()})
        row[f"{metric}_mcnemar_p"] = mcnemar_exact(a, b)
    return row


def paired_p_value(worse: int, better: int) -> float:
    """One-sided exact sign test (McNemar): the chance of ``worse`` or more of ``worse + better``
    discordant pairs going one way when either way is equally likely (scipy.special's binomial tail,
    which imports in a fraction of scipy.stats' time)."""
    from scipy.special import bdtrc

    return float(bdtrc(worse - 1, worse + better, 0.5)) if worse > 0 else 1.0


def mcnemar_exact(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided exact McNemar p-value for paired booleans ``a``, ``b``: twice the one-sided sign test of
    the larger side of the discordant pairs (:func:`paired_p_value`), at most 1."""
    only_a, only_b = int(np.sum(a & ~b)), int(np.sum(~a & b))
    return min(1.0, 2.0 * paired_p_value(max(only_a, only_b), min(only_a, only_b)))


def member_matrix(records: pd.DataFrame, column: str) -> tuple[np.ndarray, list[int]]:
    """One side's outcomes as members x examples (0/1), with the examples in order."""
    table = records.pivot_table(index="member", columns="example", values=column, aggfunc="first")
    return table.to_numpy(dtype=float), [int(e) for e in table.columns]


def interaction(side: np.ndarray) -> float:
    """The residual mean square of a side's members x examples outcomes (two-way, no replication); 0 for
    one member."""
    k, n = side.shape
    if k < 2 or n < 2:
        return 0.0
    residual = side - side.mean(axis=1, keepdims=True) - side.mean(axis=0, keepdims=True) + side.mean()
    return float((residual**2).sum()) / ((k - 1) * (n - 1))


def example_term(per_example: np.ndarray, own: float) -> float:
    """The example term (points squared; the module docstring): the variance of each example's member-mean
    outcome (or difference of two) over n, less ``own``, the members' own departures; never below 0."""
    n = len(per_example)
    return 100.0**2 * max(float(np.var(per_example, ddof=1)) - own, 0.0) / n if n > 1 else 0.0


def welch_satterthwaite(terms: list[tuple[float, int]]) -> tuple[float, float, float]:
    """The standard error, Welch-Satterthwaite degrees of freedom and 95% half-width (Student's t) of a sum
    of variance terms, each with its degrees of freedom.  scipy.special's ``stdtrit``, which scipy.stats'
    ``t.ppf`` computes with: its module imports in a fraction of scipy.stats' half second."""
    from scipy.special import stdtrit

    variance = sum(v for v, _ in terms)
    denominator = sum(v * v / df for v, df in terms)
    df = variance**2 / denominator if denominator > 0 else math.inf
    se = math.sqrt(variance)
    return se, df, (float(stdtrit(df, 0.5 + LEVEL / 2)) if math.isfinite(df) else 1.959964) * se


def claim_interval(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """D, its standard error, degrees of freedom and 95% interval for sides ``a`` and ``b`` (members x
    examples, the same examples in the same order; at least one side with two members)."""
    diff = 100.0 * (b.mean() - a.mean())
    # each side's seed term (points squared) with its degrees of freedom: a side of one member varies as the other
    means = [100.0 * side.mean(axis=1) for side in (a, b)]
    variances = [float(np.var(m, ddof=1)) if len(m) > 1 else math.nan for m in means]
    known = [v for v in variances if not math.isnan(v)]
    variances = [known[0] if math.isnan(v) else v for v in variances]
    dfs = [len(m) - 1 if len(m) > 1 else len(means[1 - i]) - 1 for i, m in enumerate(means)]
    seed = [(v / len(m), df) for v, m, df in zip(variances, means, dfs)]
    example = example_term(b.mean(axis=0) - a.mean(axis=0), interaction(a) / len(a) + interaction(b) / len(b))
    se, df, half = welch_satterthwaite([*seed, (example, max(a.shape[1] - 1, 1))])
    return {"diff": diff, "se": se, "df": df, "low": diff - half, "high": diff + half}


def member_interval(side: np.ndarray) -> tuple[float, float]:
    """The 95% interval (points) of one model's mean accuracy over its members (members x examples, 0/1), for
    seeds and examples together as :func:`claim_interval` counts a difference (its seed term s^2/k)."""
    k, n = side.shape
    mean = 100.0 * float(side.mean())
    seed = float(np.var(100.0 * side.mean(axis=1), ddof=1)) / k if k > 1 else 0.0
    example = example_term(side.mean(axis=0), interaction(side) / k)
    _, _, half = welch_satterthwaite([(seed, max(k - 1, 1)), (example, max(n - 1, 1))])
    return mean - half, mean + half


def excludes_zero(low: float, high: float) -> bool:
    """Whether an interval of a difference lies wholly on one side of 0: the difference is a finding."""
    return bool(low > 0 or high < 0)


def separates(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether the 95% interval of b - a (members x examples, the same examples in order) excludes 0: the
    claim interval where either side has several members, else the bootstrap; never on under 2 examples."""
    if a.shape[1] < 2:
        return False
    if len(a) > 1 or len(b) > 1:
        found = claim_interval(a, b)
        return excludes_zero(found["low"], found["high"])
    return excludes_zero(*bootstrap_ci(a[0].astype(bool), b[0].astype(bool)))


def claim_row(ra: pd.DataFrame, rb: pd.DataFrame, eps: str, attack: str) -> dict:
    """``robeval compare``'s row at (eps, attack) for models of several members on the same examples: per
    metric each side's mean and sample std over members, D, its claim interval and whether it excludes 0."""
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

"""Bold only where the claim test separates a column's best from the runner-up (robeval.report.bests):
on records made to be separated, tied or close, with one checkpoint a side and with members; and on a
real run, bold exactly where ``robeval compare``'s interval for that column excludes 0."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import robeval
from robeval.report.bests import NOT_SEPARATED, SEPARATED, mark_bests


def records(model: str, rates: dict[str, float], members: int = 1, n: int = 200, seed: int = 0) -> pd.DataFrame:
    """Per-example records of ``model`` at 8/255: per attack each member right on a ``rate`` share of the
    examples (members differ by a seeded draw)."""
    rng, rows = np.random.default_rng(seed), []
    for attack, rate in rates.items():
        for member in range(members):
            hits = rng.random(n) < rate
            rows += [dict(model=model, member=member, eps="8/255", attack=attack, example=e, adv_top1=bool(h),
                          adv_top5=True) for e, h in enumerate(hits)]  # fmt: skip
    return pd.DataFrame(rows)


def summary_of(found: pd.DataFrame) -> pd.DataFrame:
    means = found.groupby(["model", "eps", "attack"], sort=False)[["adv_top1", "adv_top5"]].mean() * 100
    return means.rename(columns={"adv_top1": "top1", "adv_top5": "top5"}).reset_index()


def marks(found: pd.DataFrame) -> dict[tuple[str, str], str]:
    marked = mark_bests(summary_of(found), found)
    return {(r.model, r.attack): r.best_top1 for r in marked.itertuples()}


def test_a_clear_best_is_separated_a_close_one_or_a_tie_is_not():
    found = pd.concat([records("a", {"far": 0.9, "close": 0.62, "tie": 0.5}, seed=1),
                       records("b", {"far": 0.4, "close": 0.6, "tie": 0.5}, seed=2)])  # fmt: skip
    found.loc[(found["model"] == "b") & (found["attack"] == "tie"), "adv_top1"] = found.loc[
        (found["model"] == "a") & (found["attack"] == "tie"), "adv_top1"
    ].to_numpy()  # the same outcomes: equal as printed
    got = marks(found)
    assert got[("a", "far")] == SEPARATED and got[("b", "far")] == ""
    assert got[("a", "close")] == NOT_SEPARATED and got[("b", "close")] == ""
    assert got[("a", "tie")] == got[("b", "tie")] == NOT_SEPARATED


def test_with_members_the_seed_to_seed_spread_decides():
    """A 6-point gap over 2,000 examples: separated when each side's members agree, not when the members
    of one side move by more than the gap (the claim interval counts the seeds)."""
    steady = pd.concat([records("a", {"pgd": 0.56}, members=3, n=2000, seed=3),
                        records("b", {"pgd": 0.50}, members=3, n=2000, seed=4)])  # fmt: skip
    assert marks(steady)[("a", "pgd")] == SEPARATED
    moving = pd.concat([records("a", {"pgd": r}, n=2000, seed=5 + i).assign(member=i) for i, r in enumerate((0.46, 0.66, 0.56))]
                       + [records("b", {"pgd": 0.50}, members=3, n=2000, seed=9)])  # fmt: skip
    assert marks(moving)[("a", "pgd")] == NOT_SEPARATED


@pytest.fixture(scope="module")
def run():
    return robeval.evaluate_full(models=["digits-deit", "digits-deit-elliptical"], n_examples=40, eps="8/255",
                                 attacks="fgsm,pgd", settings={"pgd": {"steps": 5}}, progress=False)  # fmt: skip


def test_bold_agrees_with_compare_on_every_column(run):
    table = run.table("md", top1_only=True)
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in table.splitlines() if line.startswith("| digits-")}  # fmt: skip
    compared = run.compare("digits-deit", "digits-deit-elliptical").table.set_index("attack")
    for position, attack in enumerate(("clean", "fgsm", "pgd", "any")):
        excludes_zero = compared.loc[attack, "top1_ci_low"] > 0 or compared.loc[attack, "top1_ci_high"] < 0
        cells = [cells[position] for cells in rows.values()]
        assert any(c.startswith("**") for c in cells) == excludes_zero, (attack, cells, compared.loc[attack])
        assert sum(c.startswith("**") or c.endswith("†") for c in cells) >= 1  # the best is always marked
    assert "the column's best, not separated" in table or "†" not in table

"""Bold only where the claim test separates a column's best from the runner-up (robeval.report.bests):
on records made to be separated, tied or close, with one checkpoint a side and with members; and on a
real run, bold exactly where ``robeval compare``'s interval for that column excludes 0 — a table that
combines runs too, where one model's name stands for other weights in each run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import robeval
from robeval.core.defaults import DEMO_RECIPE, Recipe
from robeval.report.bests import NOT_SEPARATED, SEPARATED, mark_bests
from robeval.report.naming import attack_title


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


def retrained(path: Path, recipe: Recipe, seed: int, noise: float) -> Path:
    """digits-deit's shipped weights moved by seeded noise (``noise`` times each tensor's std), written as
    train-demo writes a member: its metadata records ``recipe`` and ``seed``, as a retrained model's would."""
    from safetensors.torch import save_file

    from robeval.models.seed_training import recipe_metadata

    generator = torch.Generator().manual_seed(seed)
    state = {
        k: (v + noise * v.std() * torch.randn(v.shape, generator=generator) if v.is_floating_point() and v.numel() > 1 else v).contiguous()
        for k, v in robeval.load_model("digits-deit").net.state_dict().items()
    }  # fmt: skip
    save_file(state, str(path), metadata=recipe_metadata("digits-deit", recipe, seed, "tests"))
    return path


def markdown_cells(table: str) -> dict[str, dict[str, str]]:
    """The first block of a Markdown paper table: per row (model label) its cells by column (``FGSM Top-5``)."""
    lines = table.split("\n\n")[1].splitlines()
    head = [c.strip() for c in lines[0].split("|")[2:-1]]
    return {
        line.split("|")[1].strip(): dict(zip(head, (c.strip() for c in line.split("|")[2:-1]))) for line in lines[2:]
    }


def bold(cell: str) -> bool:
    return cell.startswith("**")


def marks_agree_with_compare(run, table: str, marked: Callable[[str], bool] = bold) -> int:
    """Every column of ``table`` (Markdown, the run's one eps): its best ``marked`` exactly where ``robeval
    compare``'s interval between it and the runner-up, each named by its own run (``RUN:MODEL``), excludes
    0, and no other cell marked; how many columns are marked."""
    cells, found = markdown_cells(table), 0
    for attack, rows in run.summary.groupby("attack", sort=False):
        for metric, title in (("top1", "Top-1"), ("top5", "Top-5")):
            column = f"{attack_title(attack)} {title}"
            shown = rows[metric].round(2)
            best, lower = rows[shown == shown.max()], rows[shown < shown.max()]
            assert not any(marked(cells[m][column]) for m in rows["model"] if m not in set(best["model"]))
            if len(best) > 1 or lower.empty:
                assert not marked(cells[best["model"].iloc[0]][column]), column  # a tie is no claim
                continue
            second, first = lower.loc[lower[metric].idxmax()], best.iloc[0]
            sides = (f"{r['run_id']}:{r['base_model']}" for r in (second, first))
            got = run.compare(*sides).table.set_index("attack").loc[attack]
            excludes_zero = got[f"{metric}_ci_low"] > 0 or got[f"{metric}_ci_high"] < 0
            assert marked(cells[first["model"]][column]) == excludes_zero, (column, cells, got)
            found += excludes_zero
    return found


@pytest.fixture(scope="module")
def combined(tmp_path_factory):
    """Two runs of digits-deit under one name: the shipped weights beside digits-deit-elliptical, and
    weights retrained with the same recipe (another seed) alone; their table names the first run's
    digits-deit by its run id, as the second run comes first."""
    folder = tmp_path_factory.mktemp("combined")
    options = dict(n_examples=60, attacks="fgsm", store=folder / "s.sqlite", progress=False)
    first = robeval.evaluate_full(models=["digits-deit", "digits-deit-elliptical"], **options)
    again = retrained(folder / "again.safetensors", DEMO_RECIPE, seed=1, noise=0.2)
    second = robeval.evaluate_full(models="digits-deit", checkpoints={"digits-deit": str(again)}, **options)
    return robeval.open_run([second.run_id, first.run_id], store=folder / "s.sqlite")


def test_a_combined_tables_bold_agrees_with_compare_for_every_pair_it_shows(combined):
    """Each cell's claim is tested on that cell's records: the digits-deit of each run on its own (pooled by
    name, the two runs' records made one model of two checkpoints and the bold disagreed with compare)."""
    table = combined.table("md")
    assert f"digits-deit ({combined.runs[1].run_id})" in markdown_cells(table) and "recipe" not in table
    assert marks_agree_with_compare(combined, table) >= 1

"""Which stored examples a gallery draws: ``--select`` conditions on the records (``"A-fooled,B-robust"``:
each ``MODEL-WORD``, MODEL a model of the run or ``A`` / ``B``, the first and second drawn model, and WORD
one of :data:`CONDITIONS`, all of which must hold), explicit ``--examples``, or by default the most
informative ones (docs/results.md, ``robeval examples``).  Torch-free: the command line checks a selection
before torch loads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from ..core.errors import UserError
from ..core.numbers import whole_number

# A condition's word -> which of a model's records (under one attack and eps, indexed by example) satisfy it.
CONDITIONS: dict[str, Callable[[pd.DataFrame], pd.Series]] = {
    "fooled": lambda r: r["clean_top1"] & ~r["adv_top1"],  # right on the clean image, wrong under attack
    "robust": lambda r: r["adv_top1"],  # right under attack
}
ALIASES = "AB"  # A, B, ...: the first, second, ... drawn model


@dataclass(frozen=True)
class Selection:
    examples: list[int]  # the examples drawn, in drawing order
    matched: int  # how many matched before --max cut them
    how: str  # what chose them, for the command's output


def parse_select(text: str, run_models: list[str], drawn: list[str]) -> list[tuple[str, str]]:
    """``"A-fooled,B-robust"`` -> ``[(model, "fooled"), (model, "robust")]``; one line for a malformed one."""
    conditions = []
    for part in (p.strip() for p in text.split(",")):
        name, dash, word = part.rpartition("-")
        if not dash or not name or word not in CONDITIONS:
            raise UserError(
                f"--select {text!r}: {part!r} is not MODEL-{'|MODEL-'.join(CONDITIONS)} "
                f"(MODEL: A, B or a model of the run: {', '.join(run_models)})"
            )
        position = ALIASES.find(name) if len(name) == 1 else -1
        if name not in run_models and not 0 <= position < len(drawn):
            known = ", ".join(f"{a}={m}" for a, m in zip(ALIASES, drawn))
            raise UserError(f"--select {text!r}: {name!r} is no model of the run ({', '.join(run_models)}) nor {known}")
        conditions.append((name if name in run_models else drawn[position], word))
    return conditions


def model_rows(records: pd.DataFrame, models: list[str]) -> dict[str, pd.DataFrame]:
    """Each model's records (of one attack and eps), indexed by example, on the examples all of them have."""
    rows = {m: records[records["model"] == m].set_index("example") for m in models}
    common = sorted(set.intersection(*(set(r.index) for r in rows.values())))
    return {m: r.loc[common] for m, r in rows.items()}


def select_examples(
    records: pd.DataFrame,
    drawn: list[str],
    select: str | None = None,
    examples: str | None = None,
    max_examples: int = 8,
) -> Selection:
    """The examples to draw from ``records`` (one attack and eps, every model of the run)."""
    if max_examples < 1:
        raise UserError(f"--max must be at least 1, got {max_examples}")
    if select is not None and examples is not None:
        raise UserError("--select and --examples both choose the examples; give one of them")
    run_models = list(dict.fromkeys(records["model"]))
    if examples is not None:
        chosen, how = _explicit(examples, model_rows(records, drawn)), "as listed"
    elif select is not None:
        chosen, how = _matching(parse_select(select, run_models, drawn), records, select), f"matching {select}"
    else:
        chosen, how = _informative(model_rows(records, drawn)), "where the models disagree first"
    return Selection(chosen[:max_examples], len(chosen), how)


def _explicit(text: str, rows: dict[str, pd.DataFrame]) -> list[int]:
    parsed = [whole_number(p.strip()) for p in text.split(",")]
    wanted = [e for e in parsed if e is not None]
    if len(wanted) < len(parsed):  # a part that is no whole number, an empty one included
        raise UserError(f"--examples {text!r}: give example indices separated by commas (3,17,42)")
    have = set(next(iter(rows.values())).index)
    missing = [e for e in wanted if e not in have]
    if missing:
        shown = ", ".join(map(str, sorted(have)[:10])) + (", ..." if len(have) > 10 else "")
        raise UserError(f"--examples: example {missing[0]} is not among the run's ({shown})")
    return list(dict.fromkeys(wanted))


def _matching(conditions: list[tuple[str, str]], records: pd.DataFrame, text: str) -> list[int]:
    rows = model_rows(records, list(dict.fromkeys(m for m, _ in conditions)))
    index = next(iter(rows.values())).index
    keep = pd.concat([CONDITIONS[word](rows[model]).astype(bool) for model, word in conditions], axis=1).all(axis=1)
    chosen = [int(e) for e in index[keep.to_numpy()]]
    if not chosen:
        raise UserError(f"--select {text!r} matches none of the run's {len(index)} examples")
    return chosen


def _informative(rows: dict[str, pd.DataFrame]) -> list[int]:
    hits = pd.DataFrame({m: r["adv_top1"].astype(bool) for m, r in rows.items()})
    fooled = pd.DataFrame({m: CONDITIONS["fooled"](r).astype(bool) for m, r in rows.items()})
    rank = (hits.nunique(axis=1) > 1).astype(int) * 2 + fooled.any(axis=1).astype(int)
    return [int(e) for e in rank.sort_values(ascending=False, kind="stable").index]

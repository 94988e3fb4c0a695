"""``robeval compare``: two evaluated models found, their records paired on examples, a row per eps and
attack.  One checkpoint a side: top-1 / top-5 of A and B, B - A, its bootstrap interval and McNemar's p;
several members a side: the claim's row (robeval.results.statistics computes both).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ..core.defaults import ANY, CLEAN
from ..core.errors import UserError
from ..models.registry import PREFIXES
from ..references import is_reference
from ..results.likeness import Side, noted_differences, refuse_unlike
from ..results.runs import StoredRun, load_run
from ..results.statistics import claim_row, paired_row
from ..results.summary import any_attack_records
from ..shifts.kinds import run_conditions
from ..store import Store
from .naming import column


def names_run(ref: str) -> bool:
    """Whether a model reference is ``RUN_ID:model`` (a name with a model prefix, ``timm:`` or
    ``robustbench:``, and a model of the user's code, ``PATH.py:CALLABLE``, are model names)."""
    own_code = is_reference(ref) and ref.count(":") == 1
    return ":" in ref and ref.partition(":")[0] not in PREFIXES and not own_code


def find_model(store: Store, ref: str, loaded: Mapping[str, StoredRun] = {}) -> tuple[StoredRun, str]:
    """``RUN_ID:model`` or ``model`` (the newest finished run that evaluated it; see :func:`names_run`);
    ``loaded``: runs of ``store`` the caller has read already, by run id."""
    if names_run(ref):
        run_id, _, model = ref.partition(":")
        run = loaded[run_id] if run_id in loaded else load_run(store, run_id)
    else:
        model, runs = ref, store.runs()
        finished = (load_run(store, i) for i in reversed(runs[runs["status"] == "finished"]["id"].tolist()))
        found = next((r for r in finished if model in set(r.records["model"])), None)
        if found is None:
            raise UserError(f"no finished run in {store.path} evaluated model {model!r}")
        run = found
    models = set(run.records["model"])
    if model not in models:
        raise UserError(f"run {run.run_id} did not evaluate model {model!r} (it has {', '.join(sorted(models))})")
    return run, model


def refuse_itself(a: tuple[str, str], b: tuple[str, str]) -> None:
    """One line when both sides, as found (``(run id, model)``), are one model of one run, however they
    were written (``RUN:MODEL`` and ``MODEL``, the run implied): a comparison with itself says nothing."""
    if a == b:
        raise UserError(
            f"both sides are {a[0]}:{a[1]}, the same model of the same run; compare two different models, "
            "or one model in two runs"
        )


def finished_attacks(run: StoredRun, model: str) -> list[str]:
    """The attacks of ``run`` that finished for ``model`` at every eps (the worst case is over those only)."""
    rows = run.summary[run.summary["model"] == model]
    complete = rows[column(rows, "status", "complete") == "complete"]
    return [a for a in run.config["attacks"] if (complete["attack"] == a).sum() == rows["eps"].nunique()]


def _with_any(run: StoredRun, model: str, attacks: list[str]) -> pd.DataFrame:
    records = run.records[run.records["model"] == model]
    return pd.concat([records, any_attack_records(records, attacks)], ignore_index=True)


def _unit_rows(
    ra: pd.DataFrame, rb: pd.DataFrame, eps: str, attack: str, refs: tuple[str, str]
) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """Both sides' records at (eps, attack), refused in one line unless every member of each side has
    the same examples; None where a side has none."""
    sides = [r[(r["eps"] == eps) & (r["attack"] == attack)] for r in (ra, rb)]
    if any(side.empty for side in sides):
        return None
    examples = [set(side["example"]) for side in sides]
    if examples[0] != examples[1] or any(len(s) != len(e) * s["member"].nunique() for s, e in zip(sides, examples)):
        raise UserError(
            f"{refs[0]} and {refs[1]} evaluated different examples at eps {eps}, {attack} ({len(examples[0])} vs "
            f"{len(examples[1])}, {len(examples[0] & examples[1])} shared); compare needs the same examples"
        )
    return sides[0], sides[1]


def compare(store: Store, ref_a: str, ref_b: str, seed: int = 0, loaded: Mapping[str, StoredRun] = {}) -> pd.DataFrame:
    """A and B on the same examples (paired_row; several members a side: claim_row), refused in
    one line when they were not evaluated alike (robeval.results.likeness); ``loaded``: as :func:`find_model`."""
    (run_a, model_a), (run_b, model_b) = find_model(store, ref_a, loaded), find_model(store, ref_b, loaded)
    refuse_itself((run_a.run_id, model_a), (run_b.run_id, model_b))
    side_a, side_b = Side(run_a, model_a), Side(run_b, model_b)
    refuse_unlike(side_a, side_b, "compare pairs like with like only")
    both = [a for a in finished_attacks(run_a, model_a) if a in finished_attacks(run_b, model_b)]
    ra, rb = _with_any(run_a, model_a, both), _with_any(run_b, model_b, both)  # worst cases over the same attacks
    several = ra["member"].nunique() > 1 or rb["member"].nunique() > 1
    shifted = [c.name for c in run_conditions(run_a.config)]  # corruptions: paired exactly as attacks
    rows = []
    for eps in [e for e in run_a.config["eps"] if e in set(ra["eps"])]:
        for attack in dict.fromkeys([CLEAN, *run_a.config["attacks"], ANY, *shifted]):
            if (sides := _unit_rows(ra, rb, eps, attack, (ref_a, ref_b))) is not None:
                rows.append(claim_row(*sides, eps, attack) if several else paired_row(*sides, eps, attack, seed))
    if not rows:
        raise UserError(f"{ref_a} and {ref_b} share no (eps, attack, example); compare needs the same examples")
    out = pd.DataFrame(rows)
    out.attrs.update(
        a=f"{run_a.run_id}:{model_a}", b=f"{run_b.run_id}:{model_b}", protocol=run_a.protocol, any_over=tuple(both),
        test="members" if several else "paired", differences=noted_differences(side_a, side_b),
    )  # fmt: skip
    return out

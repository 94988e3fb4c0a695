"""Like with like: what the two sides of a comparison (a stored run, or one model of it) differ in
(:data:`ASPECTS`), read from the runs as the store gives them back: an attack both ran with other settings
too (Square of 5,000 queries against Square of 500 is no comparison of two models).  ``robeval compare``
refuses any difference (:func:`refuse_unlike`); ``robeval table`` and ``robeval report`` refuse most of
them (:func:`robeval.results.runs.combine`) and name the rest on a line of the caption (:func:`settings_note`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import combinations
from pathlib import Path
from typing import Any

import pandas as pd

from ..attack_settings import WORK_SPLIT
from ..core.defaults import CLEAN, NOT_ATTACKS, Alternatives, names_in
from ..core.errors import UserError
from ..core.registry import Registry
from ..models.provenance import changed_file, same_code
from ..models.recipes import SEED, member_recipes, recipe_differences, recipe_text
from ..store import StoredRun
from .summary import crafting_precision


@dataclass(frozen=True)
class Side:
    run: StoredRun
    model: str | None = None

    @property
    def label(self) -> str:
        return self.run.run_id if self.model is None else f"{self.run.run_id}:{self.model}"

    def rows(self) -> pd.DataFrame:
        summary = self.run.summary
        return summary if self.model is None else summary[summary["model"] == self.model]

    def examples(self) -> frozenset:
        """The examples evaluated (the clean rows, or every record where the data has no clean images)."""
        rec = self.run.records if self.model is None else self.run.records[self.run.records["model"] == self.model]
        clean = rec[rec["attack"] == CLEAN]
        return frozenset((clean if len(clean) else rec)["example"])

    def settings(self) -> dict[str, dict[str, Any]]:
        """Each attack's settings as the summary gives them back (the store reads an older release's in today's
        meaning: old and new runs differ here as they would in the records)."""
        rows = self.rows()
        if "settings" not in rows:
            return {}
        ran = rows[~rows["attack"].isin(NOT_ATTACKS)].drop_duplicates("attack")
        return {r.attack: json.loads(r.settings) for r in ran.itertuples() if r.settings}


Aspect = Callable[[Side, Side], "str | None"]  # the difference in words, or None when the sides agree
ASPECTS: Registry[Aspect] = Registry("comparison aspect")


def _data(side: Side) -> str:
    config = side.run.config
    shift = f" under --shift {config['shift']}" if config.get("shift") else ""
    labels = f" with --class-map {config['class_map']}" if config.get("class_map") else ""
    return f"{side.run.data}{shift}{labels}"


def _same(what: str, value: Callable[[Side], Any]) -> None:
    """An aspect in which the sides differ when ``value`` of each differs."""
    ASPECTS.add(what, lambda a, b: None if value(a) == value(b) else f"{what} ({value(a)} vs {value(b)})")


_same("protocol", lambda side: side.run.protocol)
_same("threat model", lambda side: side.run.config.get("norm"))
_same("precision", lambda side: crafting_precision(side.run.config))
_same("cascade", lambda side: ("without --cascade", "with --cascade")[bool(side.run.config.get("cascade"))])
_same("data", _data)


@partial(ASPECTS.add, "examples")
def _examples(a: Side, b: Side) -> str | None:
    ea, eb = a.examples(), b.examples()
    return None if ea == eb else f"examples ({len(ea)} vs {len(eb)}, {len(ea & eb)} shared)"


@partial(ASPECTS.add, "eps")
def _eps(a: Side, b: Side) -> str | None:
    """A pair compares at the eps both sides ran: only sides that share none differ here."""
    ea, eb = list(dict.fromkeys(a.rows()["eps"])), list(dict.fromkeys(b.rows()["eps"]))
    return None if set(ea) & set(eb) else f"eps ({', '.join(ea)} vs {', '.join(eb)})"


@partial(ASPECTS.add, "attack settings")
def _settings(a: Side, b: Side) -> str | None:
    """Per attack both ran, the keys where its settings differ (``square n_queries 5000 vs 500``; not those that
    only split the work into passes: :data:`robeval.attack_settings.WORK_SPLIT`)."""
    sa, sb, found = a.settings(), b.settings(), []
    for attack in [attack for attack in sa if attack in sb]:
        one, other = sa[attack], sb[attack]
        keys = [k for k in dict.fromkeys([*one, *other]) if one.get(k) != other.get(k) and k not in WORK_SPLIT]
        if keys:
            found.append(
                f"{attack} " + ", ".join(f"{k} {one.get(k, 'unset')} vs {other.get(k, 'unset')}" for k in keys)
            )
    return f"attack settings ({'; '.join(found)})" if found else None


def differences(a: Side, b: Side, aspects: tuple[str, ...] | None = None) -> list[str]:
    """Every difference between the two sides in ``aspects`` (default: all of :data:`ASPECTS`), in words."""
    found = [ASPECTS[name](a, b) for name in (aspects or tuple(ASPECTS))]
    return [text for text in found if text]


def refuse_unlike(a: Side, b: Side, what: str, aspects: tuple[str, ...] | None = None) -> None:
    """One line naming every difference, when there is one: ``what`` compares like with like only."""
    found = differences(a, b, aspects)
    if found:
        raise UserError(f"{a.label} and {b.label} differ in {'; '.join(found)}: {what}")


def _shown_code(code: dict[str, Any], file: tuple[str, str] | None) -> str:
    """One side's code as a comparison names it: its distribution and version, then the file that differs
    (``file``: an imported one; else its own) and that file's SHA-256."""
    path, sha = file or (code.get("path", ""), code.get("sha256"))
    shown = (
        f"{code.get('distribution') or 'file'} {code.get('version') or ''} {Path(path).name} SHA-256 {str(sha)[:12]}"
    )
    return shown.replace("  ", " ")


def _code(a: Side, b: Side) -> str | None:
    """How the code of a model both sides evaluated under one name changed between the runs (run.json's
    ``code``: a file's path and SHA-256 and the files it imported, a plugin's distribution and version),
    naming the first file that differs."""
    models = [a.model] if a.model is not None and a.model == b.model else []
    if a.model is None and b.model is None:
        models = [m for m in a.run.info.get("models", {}) if m in b.run.info.get("models", {})]
    found = []
    for model in models:
        ca, cb = (dict(side.run.info.get("models", {}).get(model, {}).get("code") or {}) for side in (a, b))
        if ca and cb and not same_code(ca, cb):
            imported = changed_file(ca, cb) if ca.get("sha256") == cb.get("sha256") else None  # an imported file
            files = [(imported[0], imported[1]), (imported[0], imported[2])] if imported else [None, None]
            found.append(f"{model} ({_shown_code(ca, files[0])} vs {_shown_code(cb, files[1])})")
    return f"the models' code ({'; '.join(found)})" if found else None


def noted_differences(a: Side, b: Side) -> list[str]:
    """What two sides may differ in and still be compared, as lines a comparison prints beside the numbers
    rather than refused: the models' code, and what their recipes say (robeval.models.recipes)."""
    code = _code(a, b)
    lines = [f"note: {a.label} and {b.label} differ in {code}"] if code else []
    if a.model is None or b.model is None:
        return lines
    recipes = [member_recipes(side.run.info.get("models", {}).get(side.model, {})) for side in (a, b)]
    for side, own in zip((a, b), recipes):
        inner = [", ".join(recipe_differences(own[0], r)) for r in own[1:] if own[0] and r]
        if any(inner):
            lines.append(f"note: the members of {side.label} were trained with different recipes ({'; '.join(inner)})")
    unknown = [side.label for side, own in zip((a, b), recipes) if None in own]
    if unknown:
        return lines + [f"note: the training recipe of {' and '.join(unknown)} is unknown (the weights record none): "
                        "that both were trained alike is not shown"]  # fmt: skip
    differ = recipe_differences(recipes[0][0] or {}, recipes[1][0] or {})
    if differ:
        lines.append(f"note: A and B were trained with different recipes (A vs B: {', '.join(differ)}): the difference "
                     "is one of training procedures that differ in more than the attention")  # fmt: skip
    return lines


UNKNOWN = "unknown"  # a recipe no weights file records, as robeval.models.recipes.recipe_text says it
Recipe = Mapping[str, str]


def recipe_cells(models: Mapping[str, Sequence[Recipe | None]]) -> dict[str, Alternatives]:
    """What differs between the recipes of these models (each model's members' recipes, None where a file
    records none): per model, its members' values of the ingredients in which any two of the recipes differ
    (:func:`robeval.models.recipes.recipe_differences`, the seed aside), each distinct text once (``epochs
    20, lr 0.003``; ``unknown``).  Empty when the models differ in nothing and none is unknown, or when no
    model records a recipe (nothing can be said: a table of hub weights says nothing)."""
    known = [recipe for recipes in models.values() for recipe in recipes if recipe]
    # the ingredients (not the seed) that two of the recipes both record and give differently
    pairs = list(combinations(known, 2))
    keys = dict.fromkeys(key for recipe in known for key in recipe if key != SEED)
    fields = [k for k in keys if any(k in a and k in b and recipe_differences({k: a[k]}, {k: b[k]}) for a, b in pairs)]
    if not known or not fields and all(None not in recipes for recipes in models.values()):
        return {}
    return {
        model: Alternatives(t for t in dict.fromkeys(_member_text(r, fields, known) for r in recipes) if t)
        for model, recipes in models.items()
    }


def _member_text(recipe: Recipe | None, fields: list[str], known: list[Recipe]) -> str:
    """A member's values of ``fields`` (each spelled as the first recipe that gives it: 1e-3 is 0.001), or
    ``unknown``; empty where it records none of them."""
    if recipe is None:
        return UNKNOWN
    spelled = {
        key: next(r[key] for r in known if key in r and not recipe_differences({key: r[key]}, {key: recipe[key]}))
        for key in fields
        if key in recipe
    }
    return recipe_text(spelled) if spelled else ""


def trained_apart(a: object, b: object) -> bool:
    """Whether two models' cells of :func:`recipe_cells` show them trained otherwise: the members of either
    trained otherwise than each other, or both recipes known and different (an unknown one is not shown to
    differ: it is said, not judged)."""
    known_a, known_b = ([t for t in names_in(cell) if t != UNKNOWN] for cell in (a, b))
    return len(known_a) > 1 or len(known_b) > 1 or bool(known_a and known_b and known_a != known_b)


def settings_note(runs: list[StoredRun]) -> str:
    """The caption's line for runs of one table whose shared attacks ran with different settings, or whose
    models' code changed between them (empty when they agree): each difference, and which run had which."""
    first = Side(runs[0])
    parts = []
    for other in runs[1:]:
        found = [text for text in (_settings(first, Side(other)), _code(first, Side(other))) if text]
        if found:
            parts.append(f"runs {first.label} vs {other.run_id} differ in {'; '.join(found)}")
    return "; ".join(parts)

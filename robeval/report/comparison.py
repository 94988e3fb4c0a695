"""``robeval compare``: two evaluated models found (:func:`find_model`), their records paired on examples,
a row per eps and attack (:func:`compare`; robeval.results.statistics computes the rows), or a stored model
against a RobustBench model-info file (:func:`compare_published`).  What each row holds: docs/results.md,
"``robeval compare``", and docs/robustbench.md, "Leaderboard entries and published numbers".

The answer is one :class:`Comparison`, as data and as a document, written in the formats of
:data:`COMPARE_FORMATS` (robeval.report.formats)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.defaults import ANY, CLEAN
from ..core.eps import find_budget
from ..core.errors import UserError
from ..evaluation.protocols import autoattack_version
from ..models.registry import PREFIXES
from ..references import is_reference
from ..results.likeness import Side, noted_differences, refuse_unlike
from ..results.runs import load_run
from ..results.statistics import bootstrap_mean_ci, claim_row, paired_row
from ..results.summary import any_attack_records
from ..robustbench_ext.dataset_facts import ADVERSARIAL, CORRUPTIONS, robustbench_dataset
from ..robustbench_ext.leaderboard import info_benchmark, is_model_info_path, published_accuracy, read_model_info
from ..shifts.kinds import run_conditions
from ..store import Store, StoredRun
from .document import Document, Lines, Paragraph, Table, Values
from .formats import offered
from .grid import Measured
from .naming import column
from .robustbench import is_3dcc, standard_problem


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
    if (run_a.run_id, model_a) == (run_b.run_id, model_b):  # however written (RUN:MODEL, MODEL): itself says nothing
        raise UserError(
            f"both sides are {run_a.run_id}:{model_a}, the same model of the same run; compare two different models, "
            "or one model in two runs"
        )
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


EPS_TOLERANCE = 5e-5  # a file's eps written as a rounded decimal (0.03137) is still 8/255


def _eps(info: dict, run: StoredRun, model: str, path: str) -> str:
    """The run's eps that the file's eps names (the run's first when the file has none)."""
    have = run.records.loc[run.records["model"] == model, "eps"].drop_duplicates()
    wanted = info.get("eps")
    if wanted in (None, ""):
        return str(have.iloc[0])
    found = find_budget(have, str(wanted), run.config["norm"], EPS_TOLERANCE)
    if found is None:
        raise UserError(f"{path} is for eps {wanted}; run {run.run_id} evaluated {model} at {', '.join(have)}")
    return found


def check_benchmark(info: dict, path: str, run: StoredRun) -> None:
    """One line when the file is for another data set or threat model than the run evaluated."""
    dataset, threat = info_benchmark(path, info)
    ran = robustbench_dataset(run.config["data"])
    if dataset is not None and dataset != ran:
        raise UserError(f"{path} is for data set {dataset}; run {run.run_id} evaluated {ran} ({run.data})")
    norm, shift = run.config.get("norm"), run.config.get("shift")
    if threat in ADVERSARIAL and threat != norm:
        raise UserError(f"{path} is for threat model {threat}; run {run.run_id} attacked in {norm}")
    if threat in CORRUPTIONS and not shift:
        raise UserError(f"{path} is a {threat} entry; run {run.run_id} ran no shift (robeval run --shift ...)")


def run_scores(run: StoredRun, model: str, eps: str) -> tuple[dict[str, np.ndarray], list[str]]:
    """Per metric the run's per-example scores (1 = correct; corruptions: the mean over the conditions),
    and notes on what could not be compared."""
    records = run.records[(run.records["model"] == model) & (run.records["eps"] == eps)]
    scores = {"clean": per_example(records[records["attack"] == CLEAN])}
    members = records["member"].nunique()
    notes = [
        f"{model} has {members} members: an example's score is the mean over them, and the interval covers the "
        "sampling of examples, not the seed-to-seed variation"
    ] if members > 1 else []  # fmt: skip
    standard = list(autoattack_version("standard").autoattack_version_attacks())
    finished = finished_attacks(run, model)
    missing = [a for a in standard if a not in finished]
    if missing:
        notes.append(f"no autoattack row: the run did not finish {', '.join(missing)} for {model}")
    else:
        scores["autoattack"] = per_example(any_attack_records(records, standard))
        rows = run.summary[(run.summary["model"] == model) & (run.summary["eps"] == eps)]
        problem = standard_problem(rows) if ANY in set(rows["attack"]) else None
        notes += [f"autoattack is not AutoAttack's standard evaluation here: {problem}"] if problem else []
    corruption_of = {c.name: c.corruption for c in run_conditions(run.config)}
    shifted = records[records["attack"].isin(list(corruption_of))]
    if len(shifted):
        key = "corruptions_3d" if is_3dcc(shifted["attack"].map(corruption_of)) else "corruptions"
        scores[key] = per_example(shifted)
    return {k: v for k, v in scores.items() if len(v)}, notes


def per_example(records: pd.DataFrame) -> np.ndarray:
    """Each example's robust top-1, the mean over a model's members where it has several."""
    return records.groupby("example", sort=False)["adv_top1"].mean().to_numpy(float)


def published_row(metric: str, scores: np.ndarray, published: float, run_is_a: bool, seed: int) -> dict:
    low, high = bootstrap_mean_ci(scores, seed)
    accuracy = 100.0 * float(scores.mean())
    diff = published - accuracy if run_is_a else accuracy - published
    values = {"run": accuracy, "ci_low": low, "ci_high": high, "published": published, "diff": diff}
    rounded = {k: round(v, 2) for k, v in values.items()}
    return {"metric": metric, "n": len(scores), **rounded, "inside_ci": bool(low <= published <= high)}


def compare_published(store: Store, ref_a: str, ref_b: str, seed: int = 0) -> pd.DataFrame:
    """One stored model (``RUN_ID:model`` or ``model``) against one model-info file, in either order."""
    run_is_a = is_model_info_path(ref_b)
    if run_is_a == is_model_info_path(ref_a):
        raise UserError("compare takes one stored model and one RobustBench model-info file (or two stored models)")
    ref, path = (ref_a, ref_b) if run_is_a else (ref_b, ref_a)
    info = read_model_info(path)
    run, model = find_model(store, ref)
    check_benchmark(info, path, run)
    eps = _eps(info, run, model, path)
    scores, notes = run_scores(run, model, eps)
    rows = [
        published_row(metric, values, published, run_is_a, seed)
        for metric, values in scores.items()
        if (published := published_accuracy(info, metric)) is not None
    ]
    labels = [f"{run.run_id}:{model}", Path(path).name]
    a, b = labels if run_is_a else labels[::-1]
    out = pd.DataFrame(rows)
    out.attrs.update(a=a, b=b, eps=eps, notes=notes, test="published")
    return out


ONE_CHECKPOINT = (
    "The claim rests on one checkpoint each: these are differences between two checkpoints, not between two "
    "training procedures, which vary from seed to seed. Give each model several members (robeval train-demo "
    "--seeds 0-2; --checkpoint NAME=A,B,C) to test it against the seed-to-seed variation."
)


@dataclass
class Comparison:
    """Models ``a`` and ``b`` (as ``RUN_ID:MODEL``, or a model-info file) compared: ``table`` holds the
    numbers per eps and attack of the ``test`` (``paired``, ``members`` or ``published``: docs/results.md;
    ``members``: ``top1_beyond`` says whether the difference exceeds the seed-to-seed variation).
    ``lines``: any difference in the models' code; ``preface``: what the document says first (``robeval
    compare``: which run it took, and why); ``render("md" | "csv" | "json")`` and ``str``
    give what ``robeval compare`` prints."""

    a: str
    b: str
    protocol: str
    table: pd.DataFrame
    test: str = "paired"
    lines: list[str] = field(default_factory=list)
    preface: str | None = None

    def render(self, format: str = "md") -> str:
        return offered(format, COMPARE_FORMATS).render(self.document)

    def __str__(self) -> str:
        return self.render()

    @property
    def verdicts(self) -> list[str]:
        """The claim in words: per eps, whether B - A of the worst case (or each row, without one)
        exceeds the seed-to-seed variation; for one checkpoint each, that the claim rests on them; against
        a model-info file (no paired test), nothing."""
        if self.test == "published":
            return []
        if self.test == "paired":
            return [ONE_CHECKPOINT]
        rows = headline(self.table).to_dict("records")
        notes = [note for note in dict.fromkeys(one_side_note(r, self.a, self.b) for r in rows) if note]
        return [verdict(r, self.a, self.b) for r in rows] + notes

    @property
    def document(self) -> Document:
        """The comparison as ``robeval compare`` prints it: its test's document, then the verdicts and what
        differs; its numbers as the values the data formats write."""
        lines = self.verdicts + self.lines
        preface = [Paragraph(self.preface)] if self.preface else []
        return [*preface, *DOCUMENTS[self.test](self.table), *([Lines(lines)] if lines else []), Values(self.table)]


COMPARE_FORMATS = ("md", "csv", "json")


def comparison(store: Store, ref_a: str, ref_b: str, seed: int = 0, loaded: Mapping[str, StoredRun] = {}) -> Comparison:
    """``ref_a`` against ``ref_b`` in ``store`` (``RUN_ID:MODEL`` each, or one a model-info FILE.json);
    ``loaded``: runs of the store read already, by run id (the report's)."""
    if is_model_info_path(ref_a) or is_model_info_path(ref_b):
        table = compare_published(store, ref_a, ref_b, seed=seed)
    else:
        table = compare(store, ref_a, ref_b, seed=seed, loaded=loaded)
    attrs = table.attrs
    return Comparison(
        attrs["a"], attrs["b"], attrs.get("protocol", ""), table, attrs["test"], list(attrs.get("differences", []))
    )


def compared_head(top1: Sequence[str], top5: Sequence[str]) -> tuple[str, ...]:
    """A comparison table's header: eps, attack and n, then per metric A, B, their difference and the
    test's own columns (``top1``, ``top5``)."""
    return ("eps", "attack", "n", "A top-1", "B top-1", "diff", *top1, "A top-5", "B top-5", "diff", *top5)


def comparison_blocks(
    heading: str, head: Sequence[str], align: str, result, cells: Callable[[dict, str], list]
) -> Document:
    """A comparison's heading and its table (``head``: its column names): per row its eps, attack and n,
    then ``cells(row, metric)`` for top-1 and for top-5."""
    rows = [[r["eps"], r["attack"], r["n"], *cells(r, "top1"), *cells(r, "top5")] for r in result.to_dict("records")]
    return [Paragraph(heading), Table(head, rows, align)]


PAIRED_HEAD = compared_head(("95% CI", "p"), ("95% CI", "p"))


def paired_document(result: pd.DataFrame) -> Document:
    a, b = result.attrs.get("a", "A"), result.attrs.get("b", "B")
    heading = (
        f"Paired comparison: A = {a}, B = {b} (protocol {result.attrs.get('protocol', '')}); "
        "diff = B - A in points, 95% bootstrap CI, exact McNemar p; any = the worst case over the attacks both "
        f"finished ({', '.join(result.attrs.get('any_over', ())) or 'none'})"
    )
    return comparison_blocks(heading, PAIRED_HEAD, "llrrrrlrrrrlr", result, _paired_cells)


def _paired_cells(r: dict, m: str) -> list[object]:
    return [f"{r[f'{m}_a']:.2f}", f"{r[f'{m}_b']:.2f}", f"{r[f'{m}_diff']:+.2f}",
            f"[{r[f'{m}_ci_low']:+.2f}, {r[f'{m}_ci_high']:+.2f}]", f"{r[f'{m}_mcnemar_p']:.3g}"]  # fmt: skip


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


PUBLISHED_HEAD = ("metric", "n", "run", "95% CI", "published", "diff", "inside CI")
PUBLISHED_CELLS = ("{metric}", "{n}", "{run:.2f}", "[{ci_low:.2f}, {ci_high:.2f}]", "{published:.2f}", "{diff:+.2f}")


def published_document(result: pd.DataFrame) -> Document:
    attrs = result.attrs
    head = (
        f"Against published numbers: A = {attrs.get('a', 'A')}, B = {attrs.get('b', 'B')} (eps {attrs.get('eps', '')}); "
        "diff = B - A in points. No paired test: a model-info file holds aggregate accuracies, not per-example "
        "outcomes; the 95% CI is a bootstrap of the run's accuracy over its examples, and inside = the published "
        "value lies in it"
    )
    rows = [
        [c.format_map(r) for c in PUBLISHED_CELLS] + ["yes" if r["inside_ci"] else "no"]
        for r in result.to_dict("records")
    ]
    notes = [Paragraph(f"Note: {note}") for note in attrs.get("notes", [])]
    return [Paragraph(head), Table(PUBLISHED_HEAD, rows, "lrrlrrl"), *notes]


DOCUMENTS = {"paired": paired_document, "members": claim_document, "published": published_document}  # by test

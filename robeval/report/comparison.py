"""``robeval compare``'s answer as data and as a document, one :class:`Comparison` for each test:
``paired`` and ``members`` (:mod:`.paired`; the rows robeval.results.statistics computes) and ``published``
(:mod:`.published_compare`); the claim in words for models of several members ("attention B is more
robust than attention A": whether the difference exceeds the seed-to-seed variation); written in the
formats of :data:`COMPARE_FORMATS` (robeval.report.formats)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from ..core.defaults import ANY
from ..robustbench_ext.leaderboard import is_model_info_path
from ..store import Store, StoredRun
from .document import Document, Lines, Paragraph, Table, Values
from .formats import offered
from .grid import Measured
from .paired import compare
from .published_compare import compare_published

ONE_CHECKPOINT = (
    "The claim rests on one checkpoint each: these are differences between two checkpoints, not between two "
    "training procedures, which vary from seed to seed. Give each model several members (robeval train-demo "
    "--seeds 0-2; --checkpoint NAME=A,B,C) to test it against the seed-to-seed variation."
)


@dataclass
class Comparison:
    """Models ``a`` and ``b`` (as ``RUN_ID:MODEL``, or a model-info file) compared: ``table`` holds the
    numbers per eps and attack of the ``test`` (the module docstring; ``members``: ``top1_beyond`` says
    whether the difference exceeds the seed-to-seed variation).  ``lines``: any difference in the models'
    code; ``preface``: what the document says first (``robeval compare``: which run it took, and why);
    ``render("md" | "csv" | "json")`` and ``str`` give what ``robeval compare`` prints."""

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

"""``robeval compare``'s answer as data and as a document, one :class:`Comparison` for each test:
``paired`` (:mod:`.paired`), ``members`` (:mod:`.claim`) and ``published`` (:mod:`.published_compare`);
written in the formats of :data:`COMPARE_FORMATS` (robeval.report.formats)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from ..robustbench_ext.leaderboard import is_model_info_path
from ..store import Store, StoredRun
from .claim import claim_document, headline, one_side_note, verdict
from .document import Document, Lines, Paragraph, Values
from .formats import offered
from .paired import compare, paired_document
from .published_compare import compare_published, published_document

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


DOCUMENTS = {"paired": paired_document, "members": claim_document, "published": published_document}  # by test
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

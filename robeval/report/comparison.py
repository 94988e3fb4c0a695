"""``robeval compare``'s answer as data with its renderings: two models paired example by example
(robeval.report.compare), or a run's model against a RobustBench model-info file's published numbers
(robeval.report.published_compare), as one :class:`Comparison`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from ..registry import Registry
from ..results.store import Store
from ..robustbench_ext.leaderboard import is_model_info_path
from .compare import compare, to_markdown
from .published_compare import compare_published, published_markdown


@dataclass
class Comparison:
    """Models ``a`` and ``b`` (as ``RUN_ID:MODEL``, or a model-info file) compared: ``table`` holds the
    numbers per eps and attack (top-1 / top-5 of each side, the difference B - A, its 95% bootstrap
    interval and the exact McNemar p; against a file, the run's interval and the published value);
    ``render("md" | "csv" | "json")`` and ``str`` give what ``robeval compare`` prints."""

    a: str
    b: str
    protocol: str
    table: pd.DataFrame
    published: bool = False  # one side is a RobustBench model-info file: no paired test

    def render(self, format: str = "md") -> str:
        return FORMATS.get(format)(self)

    def __str__(self) -> str:
        return self.render()


FORMATS: Registry[Callable[[Comparison], str]] = Registry("format")
FORMATS.add("md", lambda c: (published_markdown if c.published else to_markdown)(c.table))
FORMATS.add("csv", lambda c: c.table.to_csv(index=False))
FORMATS.add("json", lambda c: c.table.to_json(orient="records", indent=2) + "\n")


def comparison(store: Store, ref_a: str, ref_b: str, seed: int = 0) -> Comparison:
    """``ref_a`` against ``ref_b`` in ``store`` (``RUN_ID:MODEL`` each, or one a model-info FILE.json)."""
    published = is_model_info_path(ref_a) or is_model_info_path(ref_b)
    table = (compare_published if published else compare)(store, ref_a, ref_b, seed=seed)
    attrs = table.attrs
    return Comparison(attrs.get("a", ref_a), attrs.get("b", ref_b), attrs.get("protocol", ""), table, published)

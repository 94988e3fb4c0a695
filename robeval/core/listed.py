"""Lists kept as values in a summary's cells: the attacks a worst case covers, the audit stages that
escalated, the units not run, the parts of an audit's description.  A cell holds the tuple itself, so
a reader takes its items as they are and never splits a text back into them; the text is made only where
a file or a cell is written (``str``: results.csv's cells have always joined them so)."""

from __future__ import annotations

from typing import Any


class Names(tuple[str, ...]):
    """Names, shown comma-joined (``fgsm,pgd``; empty: no text)."""

    separator = ","

    def __str__(self) -> str:
        return self.separator.join(map(str, self))


class Phrases(Names):
    """Phrases of one description, shown joined by ``"; "``."""

    separator = "; "


class Alternatives(Names):
    """Texts that differ between the parts of one thing (the recipes of a model's members), shown joined by
    ``" / "``."""

    separator = " / "


def names_in(value: Any) -> Names:
    """A cell's names: the tuple it holds, none for a missing cell (a combined table's row of a run
    without the column)."""
    return Names(value) if isinstance(value, tuple) else Names()

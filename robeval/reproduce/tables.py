"""The papers' tables that ``robeval reproduce NAME`` regenerates: the registration types and their registry.

What a registration names: docs/reproduce.md, "What a table is".  Registering a table is all it takes for
``reproduce --list``, the run(s), the store and the three renderings to know it; the registrations
themselves are in ``elliptical.py`` and ``hosseini.py`` (one module per paper).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.registry import Registry


@dataclass(frozen=True)
class Kind:
    """What a table measures: the layouts it can be printed in (robeval.reproduce.render) and how it
    is made (robeval.reproduce.run): ``run`` one stored run, ``profile`` robeval profile, ``column-runs``
    one stored run per column."""

    layouts: tuple[str, ...]
    runner: str


TABLE_KINDS = {
    "attacks": Kind(("attacks-as-rows", "models-as-rows"), "run"),
    "accuracy": Kind(("accuracy-per-parameter",), "run"),
    "efficiency": Kind(("efficiency", "latency-as-columns"), "profile"),
    "shift": Kind(("runs-as-columns",), "column-runs"),
    "accuracy-by-data": Kind(("runs-as-columns",), "column-runs"),
}


@dataclass(frozen=True)
class Row:
    """One row of a paper table: what the paper calls it, and which model fills it.  ``against``: the
    label of the row this one's change (%) is computed against (efficiency tables), if any."""

    label: str
    imagenet: str = ""
    digits: str = ""
    against: str = ""

    def model(self, digits: bool) -> str:
        return self.digits if digits else self.imagenet


@dataclass(frozen=True)
class Column:
    """One column of a table whose columns are runs (or profiles) of their own.

    ``measure``: how a cell is read (a key of robeval.reproduce.column_runs.MEASURES for a run, of
    robeval.reproduce.render.PROFILE_MEASURES for a profile, or ``n/a``); ``data``: the
    ``--data-for`` key whose path its run reads (an image folder, or with ``published`` the folder of
    that published data set's files); ``options``: the run options the column fixes (``shift``,
    ``corruptions``); ``models``: one per row where the column's models are not the rows' own;
    ``note``: what the caption says of it (for measure ``n/a``: why it does not apply)."""

    key: str
    title: str
    measure: str
    data: str = ""
    published: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    models: tuple[str, ...] = ()
    note: str = ""

    @property
    def runs(self) -> bool:
        return self.measure != "n/a"


@dataclass(frozen=True)
class PaperTable:
    name: str
    title: str
    source: str
    kind: str  # a key of TABLE_KINDS
    rows: tuple[Row, ...]
    attacks: tuple[str, ...] = ()
    eps: str = "1/255"
    digits_eps: str = "8/255"  # the demo's budget: at the paper's eps the 8x8 digits barely move
    norm: str = "Linf"
    protocol: str = "nielsen2024"  # the protocol the paper's numbers come from
    layout: str = "attacks-as-rows"  # one of its kind's layouts (render.LAYOUTS and PROFILE_LAYOUTS, column_runs)
    notes: tuple[str, ...] = field(default_factory=tuple)
    digits_notes: tuple[str, ...] = field(default_factory=tuple)  # what the digits version changes
    columns: tuple[Column, ...] = ()  # the paper's columns, each a run of its own (column-runs, latency)
    digits_columns: tuple[Column, ...] = ()  # the digits version's columns
    profile_options: dict[str, Any] = field(default_factory=dict)  # what the paper's profile fixes
    # training runs the paper's cells average: more than 1, each cell is the mean ± std over that many
    # checkpoints (members) of each row's model, one per training seed
    members: int = 1

    @property
    def runner(self) -> str:
        return TABLE_KINDS[self.kind].runner

    def models(self, digits: bool) -> list[str]:
        """The rows' models, in row order (a model may fill several rows)."""
        return [r.model(digits) for r in self.rows]

    def labels(self, digits: bool) -> dict[str, str]:
        """Model name -> the row label the paper prints."""
        return {r.model(digits): r.label for r in self.rows}

    def table_columns(self, digits: bool) -> tuple[Column, ...]:
        return self.digits_columns if digits else self.columns

    def column_models(self, column: Column, digits: bool) -> list[str]:
        """The model of each row in ``column``."""
        return list(column.models) or self.models(digits)

    def every_model(self, digits: bool) -> list[str]:
        """Every model the table evaluates or profiles, once each, in order of appearance."""
        if not (columns := self.table_columns(digits)):
            return list(dict.fromkeys(self.models(digits)))
        return list(dict.fromkeys(m for c in columns if c.runs for m in self.column_models(c, digits)))

    def data_keys(self, digits: bool) -> list[str]:
        """The ``--data-for`` keys the paper's version reads."""
        return list(dict.fromkeys(c.data for c in self.table_columns(digits) if c.runs and c.data))


TABLES: Registry[PaperTable] = Registry("paper table", "robeval reproduce --list")


def register_table(table: PaperTable) -> PaperTable:
    if table.kind not in TABLE_KINDS:
        raise ValueError(f"paper table {table.name!r}: kind must be one of {', '.join(TABLE_KINDS)}")
    layouts = TABLE_KINDS[table.kind].layouts
    if table.layout not in layouts:
        raise ValueError(f"paper table {table.name!r}: a {table.kind} table is laid out as {' or '.join(layouts)}")
    if table.members > 1 and table.runner != "column-runs":
        raise ValueError(f"paper table {table.name!r}: a table over members is a run per column (column-runs)")
    for column in (*table.columns, *table.digits_columns):
        if column.models and len(column.models) != len(table.rows):
            raise ValueError(f"paper table {table.name!r}: column {column.key!r} needs one model per row")
    return TABLES.add(table.name, table)


def list_tables() -> list[PaperTable]:
    return list(TABLES.values())

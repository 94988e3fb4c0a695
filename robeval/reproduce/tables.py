"""The papers' tables that ``robeval reproduce NAME`` regenerates: one registration per table.

Each :class:`PaperTable` names the models (with the row label the paper prints, the ImageNet model
and its digits demo counterpart), the attacks, eps, norm and protocol the paper used, and the layout
it printed.  Registering a table is all it takes for ``reproduce --list``, the run, the store and the
three renderings (Markdown, CSV, LaTeX) to know it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import lookup

SEVEN_ATTACKS = ("fgsm", "pgd", "spsa", "apgd-ce", "apgd-t", "fab-t", "square")


@dataclass(frozen=True)
class Row:
    """One row of a paper table: what the paper calls it, and which model fills it."""

    label: str
    imagenet: str
    digits: str


@dataclass(frozen=True)
class PaperTable:
    name: str
    title: str
    source: str
    kind: str  # "attacks" (a run: top-1/top-5 per attack) or "efficiency" (robeval profile)
    rows: tuple[Row, ...]
    attacks: tuple[str, ...] = ()
    eps: str = "1/255"
    digits_eps: str = "8/255"  # the demo's budget: at the paper's eps the 8x8 digits barely move
    norm: str = "Linf"
    protocol: str = "nielsen2024"  # the protocol the paper's numbers come from
    layout: str = "attacks-as-rows"  # or "models-as-rows"
    notes: tuple[str, ...] = field(default_factory=tuple)

    def models(self, digits: bool) -> list[str]:
        return [r.digits if digits else r.imagenet for r in self.rows]

    def labels(self, digits: bool) -> dict[str, str]:
        """Model name -> the row label the paper prints."""
        return {(r.digits if digits else r.imagenet): r.label for r in self.rows}


_TABLES: dict[str, PaperTable] = {}


def register_table(table: PaperTable) -> PaperTable:
    if table.name in _TABLES:
        raise ValueError(f"paper table {table.name!r} registered twice")
    if table.kind not in ("attacks", "efficiency"):
        raise ValueError(f"paper table {table.name!r}: kind must be attacks or efficiency")
    _TABLES[table.name] = table
    return table


def list_tables() -> list[PaperTable]:
    return list(_TABLES.values())


def get_table(name: str) -> PaperTable:
    return lookup(_TABLES, name, "paper table", "robeval reproduce --list")


ELLIPTICAL = "Nielsen, Abdullaev, Teo, Nguyen: Elliptical Attention, NeurIPS 2024"

def _deit_vs_elliptical(size: str) -> tuple[Row, Row]:
    return (Row("DeiT", f"deit-{size}", "digits-deit"),
            Row("DeiT-Elliptical", f"deit-{size}-elliptical", "digits-deit-elliptical"))


for _name, _size, _eps, _where in (
        ("elliptical-table-e", "small", "3/255", "rebuttal, Table E"),
        ("elliptical-tiny-attacks", "tiny", "1/255", "the paper's ImageNet attack table")):
    register_table(PaperTable(
        name=_name, title=f"DeiT-{_size} vs DeiT-Elliptical-{_size} under seven attacks, eps {_eps} ({_where})",
        source=f"{ELLIPTICAL}, {_where}", kind="attacks", rows=_deit_vs_elliptical(_size), attacks=SEVEN_ATTACKS,
        eps=_eps))

register_table(PaperTable(
    name="elliptical-efficiency",
    title="Efficiency of DeiT vs DeiT-Elliptical: throughput, memory of a pass, FLOPs per image, parameters",
    source=f"{ELLIPTICAL}, efficiency comparison",
    kind="efficiency",
    rows=_deit_vs_elliptical("tiny"),
    layout="models-as-rows",
))

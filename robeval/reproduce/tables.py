"""The papers' tables that ``robeval reproduce NAME`` regenerates: one registration per table.

Each :class:`PaperTable` names the models (with the row label the paper prints, the ImageNet model
and its digits demo counterpart), the attacks, eps, norm and protocol the paper used, and the layout
it printed.  Registering a table is all it takes for ``reproduce --list``, the run, the store and the
three renderings (Markdown, CSV, LaTeX) to know it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..attacks import SUITE
from ..registry import Registry

TABLE_KINDS = {  # what a table measures -> the layouts it can be printed in (robeval.reproduce.render)
    "attacks": ("attacks-as-rows", "models-as-rows"),
    "accuracy": ("accuracy-per-parameter",),
    "efficiency": ("efficiency",),
}


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
    kind: str  # "attacks" (a run: top-1/top-5 per attack), "accuracy" (a clean run) or "efficiency" (robeval profile)
    rows: tuple[Row, ...]
    attacks: tuple[str, ...] = ()
    eps: str = "1/255"
    digits_eps: str = "8/255"  # the demo's budget: at the paper's eps the 8x8 digits barely move
    norm: str = "Linf"
    protocol: str = "nielsen2024"  # the protocol the paper's numbers come from
    layout: str = "attacks-as-rows"  # a layout of robeval.reproduce.render.LAYOUTS
    notes: tuple[str, ...] = field(default_factory=tuple)

    def models(self, digits: bool) -> list[str]:
        return [r.digits if digits else r.imagenet for r in self.rows]

    def labels(self, digits: bool) -> dict[str, str]:
        """Model name -> the row label the paper prints."""
        return {(r.digits if digits else r.imagenet): r.label for r in self.rows}


TABLES: Registry[PaperTable] = Registry("paper table", "robeval reproduce --list")


def register_table(table: PaperTable) -> PaperTable:
    if table.kind not in TABLE_KINDS:
        raise ValueError(f"paper table {table.name!r}: kind must be one of {', '.join(TABLE_KINDS)}")
    if table.layout not in TABLE_KINDS[table.kind]:
        raise ValueError(
            f"paper table {table.name!r}: a {table.kind} table is laid out as {' or '.join(TABLE_KINDS[table.kind])}"
        )
    return TABLES.add(table.name, table)


def list_tables() -> list[PaperTable]:
    return list(TABLES.values())


def get_table(name: str) -> PaperTable:
    return TABLES.get(name)


ELLIPTICAL = "Nielsen, Abdullaev, Teo, Nguyen: Elliptical Attention, NeurIPS 2024"


def _deit_vs_elliptical(size: str) -> tuple[Row, Row]:
    return (
        Row("DeiT", f"deit-{size}", "digits-deit"),
        Row("DeiT-Elliptical", f"deit-{size}-elliptical", "digits-deit-elliptical"),
    )


for _name, _size, _eps, _where in (
    ("elliptical-table-e", "small", "3/255", "rebuttal, Table E"),
    ("elliptical-tiny-attacks", "tiny", "1/255", "the paper's ImageNet attack table"),
):
    register_table(
        PaperTable(
            name=_name,
            title=f"DeiT-{_size} vs DeiT-Elliptical-{_size} under seven attacks, eps {_eps} ({_where})",
            source=f"{ELLIPTICAL}, {_where}",
            kind="attacks",
            rows=_deit_vs_elliptical(_size),
            attacks=SUITE,
            eps=_eps,
        )
    )

register_table(
    PaperTable(
        name="elliptical-efficiency",
        title="Efficiency of DeiT vs DeiT-Elliptical: throughput, memory of a pass, FLOPs per image, parameters",
        source=f"{ELLIPTICAL}, efficiency comparison",
        kind="efficiency",
        rows=_deit_vs_elliptical("tiny"),
        layout="efficiency",
    )
)


def _tiny(label: str, kind: str) -> Row:
    """A row of a DeiT-tiny attention baseline (``deit-tiny-<kind>`` / ``digits-deit-<kind>``)."""
    return Row(label, f"deit-tiny-{kind}", f"digits-deit-{kind}")


ROBUST_BASELINES = (
    Row("DeiT", "deit-tiny", "digits-deit"),
    Row("Distill", "deit-tiny-distilled", "digits-deit-distilled"),
    _tiny("FourierFormer", "fourier"),
    _tiny("RVT", "rvt"),
    _tiny("DeiT-KDE", "kde"),
    _tiny("DeiT-RKDE", "rkde"),
    _tiny("DeiT-SPKDE", "spkde"),
    _tiny("DeiT-MoM", "mom"),
    _tiny("DeiT-Elliptical", "elliptical"),
)
BASELINES_NOTE = (
    "RVT is the authors' RVT-style DeiT-tiny (deit-tiny-rvt: normalised keys, learned attention mask), "
    "as their robustness zoo builds it; Mao et al.'s own RVT is rvt-tiny"
)

register_table(
    PaperTable(
        name="elliptical-robust-baselines",
        title="DeiT-tiny and the robust baselines under FGSM, PGD and SPSA, eps 1/255",
        source=f"{ELLIPTICAL}, robustness table against robust baselines (after Han et al. 2023)",
        kind="attacks",
        rows=ROBUST_BASELINES,
        attacks=("fgsm", "pgd", "spsa"),
        eps="1/255",
        layout="models-as-rows",
        notes=(BASELINES_NOTE,),
    )
)

register_table(
    PaperTable(
        name="elliptical-efficiency-baselines",
        title="Efficiency of DeiT-Elliptical against the robust baselines (changes against DeiT-Elliptical)",
        source=f"{ELLIPTICAL}, efficiency comparison with the robust baselines",
        kind="efficiency",
        rows=(ROBUST_BASELINES[-1], *ROBUST_BASELINES[:-1]),
        layout="efficiency",
        notes=(BASELINES_NOTE,),
    )
)

register_table(
    PaperTable(
        name="swin-s-attention",
        title="Swin-S with standard, Optimised, Efficient and Super attention: top-1, parameters, accuracy per parameter",
        source='Hosseini & Hosseini, "You Need to Pay Better Attention", arXiv 2403.01643, Swin-S table',
        kind="accuracy",
        rows=(
            Row("Standard", "swin-small", "digits-swin"),
            *(Row(k.capitalize(), f"swin-small-{k}", f"digits-swin-{k}") for k in ("optimised", "efficient", "super")),
        ),
        protocol="standard",
        layout="accuracy-per-parameter",
        notes=("accuracy per parameter = (top-1 / the standard model's) / (parameters / the standard model's)",),
    )
)

"""The Elliptical Attention paper's tables (Nielsen, Abdullaev, Teo, Nguyen, NeurIPS 2024), checked against
its captions, and one extension of robeval's own, titled as such (docs/reproduce.md, "The tables")."""

from __future__ import annotations

from ..attacks import SUITE
from ..shifts.catalog import EXTRA
from .tables import Column, PaperTable, Row, register_table

ELLIPTICAL = "Nielsen, Abdullaev, Teo, Nguyen: Elliptical Attention, NeurIPS 2024"


def _deit_vs_elliptical(size: str, suffix: str = "") -> tuple[Row, Row]:
    """DeiT and DeiT-Elliptical of one size (``suffix``: a size in the labels; the Elliptical row's
    change is against the DeiT of its size)."""
    deit = f"DeiT{suffix}"
    return (
        Row(deit, f"deit-{size}", "digits-deit"),
        Row(f"DeiT-Elliptical{suffix}", f"deit-{size}-elliptical", "digits-deit-elliptical", against=deit),
    )


register_table(
    PaperTable(
        name="elliptical-table-e",
        title="DeiT-small vs DeiT-Elliptical-small under seven attacks, eps 3/255 (rebuttal, Table E)",
        source=f"{ELLIPTICAL}, rebuttal, Table E",
        kind="attacks",
        rows=_deit_vs_elliptical("small"),
        attacks=SUITE,
        eps="3/255",
    )
)

register_table(
    PaperTable(
        name="elliptical-tiny-attacks",
        title="DeiT-tiny vs DeiT-Elliptical-tiny under seven attacks, eps 1/255 (a robeval extension, not a paper table)",
        source=f"robeval's extension of {ELLIPTICAL}: Table E's seven attacks on the tiny models at the "
        "ImageNet attack table's 1/255 (no table of the paper has this; the paper's own tables are "
        "elliptical-robust-baselines and elliptical-table-e)",
        kind="attacks",
        rows=_deit_vs_elliptical("tiny"),
        attacks=SUITE,
        eps="1/255",
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
RVT_NOTE = (
    "{label} is the authors' RVT-style DeiT-tiny (deit-tiny-rvt: normalised keys, learned attention mask), "
    "as their robustness zoo builds it; Mao et al.'s own RVT is rvt-tiny"
)

register_table(
    PaperTable(
        name="elliptical-robust-baselines",
        title="Top-1 and Top-5 on ImageNet under PGD, FGSM and SPSA, eps 1/255: DeiT-tiny and the robust baselines",
        source=f"{ELLIPTICAL}, the ImageNet attack table (robust baselines after Han et al. 2023)",
        kind="attacks",
        rows=ROBUST_BASELINES,
        attacks=("pgd", "fgsm", "spsa"),
        eps="1/255",
        layout="models-as-rows",
        notes=(RVT_NOTE.format(label="RVT"),),
    )
)

register_table(
    PaperTable(
        name="elliptical-efficiency",
        title="Side-by-side efficiency comparison of DeiT and DeiT-Elliptical (tiny, small, base)",
        source=f"{ELLIPTICAL}, side-by-side efficiency table",
        kind="efficiency",
        rows=tuple(r for size in ("tiny", "small", "base") for r in _deit_vs_elliptical(size, f"-{size}")),
        layout="efficiency",
        notes=("(+x%): DeiT-Elliptical's change against the DeiT of the same size",),
        digits_notes=(
            "every size is the same two digits models (digits-deit, digits-deit-elliptical), each "
            "profiled once: the three sizes' rows repeat their figures",
        ),
    )
)

register_table(
    PaperTable(
        name="elliptical-efficiency-baselines",
        title="Efficiency comparison between Elliptical and baseline robust models",
        source=f"{ELLIPTICAL}, efficiency table of the robust baselines",
        kind="efficiency",
        rows=(
            _tiny("DeiT-MoM", "mom"),
            _tiny("DeiT-RKDE", "rkde"),
            _tiny("DeiT-SPKDE", "spkde"),
            _tiny("DeiT-RVT", "rvt"),
            _tiny("DeiT-Elliptical", "elliptical"),
        ),
        layout="efficiency",
        notes=(RVT_NOTE.format(label="DeiT-RVT"),),
    )
)

C_CORRUPTIONS = "the 15 corruptions at severities 1-5"


def _imagenet_c(key: str, title: str, measure: str, corruptions: str, note: str) -> Column:
    """A column read from the ImageNet-C tree (``--data-for imagenet-c``), on ``corruptions``."""
    return Column(
        key, title, measure, data="imagenet-c", options={"shift": "imagenet-c", "corruptions": corruptions}, note=note
    )


register_table(
    PaperTable(
        name="elliptical-imagenet-shift",
        title="Distribution shift: ImageNet-R and ImageNet-A top-1, ImageNet-C mCE and ImageNet-C (Extra), "
        "DeiT vs DeiT-Elliptical (tiny)",
        source=f"{ELLIPTICAL}, appendix table of ImageNet-R, ImageNet-A and ImageNet-C",
        kind="shift",
        rows=_deit_vs_elliptical("tiny"),
        protocol="standard",
        layout="runs-as-columns",
        columns=(
            Column(
                "imagenet-r",
                "ImageNet-R Top-1 (%)",
                "top1",
                data="imagenet-r",
                options={"shift": "imagenet-r"},
                note="ImageNet-R and ImageNet-A: top-1 with the logits restricted to their 200 classes",
            ),
            Column("imagenet-a", "ImageNet-A Top-1 (%)", "top1", data="imagenet-a", options={"shift": "imagenet-a"}),
            _imagenet_c(
                "imagenet-c",
                "ImageNet-C mCE (%)",
                "mce",
                "common",
                f"ImageNet-C mCE: {C_CORRUPTIONS}, each corruption's error divided by AlexNet's "
                "(Hendrycks & Dietterich 2019), lower is better",
            ),
            _imagenet_c(
                "imagenet-c-extra",
                "ImageNet-C (Extra) mean error (%)",
                "mean-error",
                "extra",
                "ImageNet-C (Extra): the paper prints an mCE, but AlexNet's errors on the 4 extra "
                f"corruptions ({', '.join(c.replace('_', ' ') for c in EXTRA)}) are not among the "
                "benchmark's published normalisers (those cover the 15), so this column is their "
                "unnormalised mean top-1 error at severities 1-5, lower is better",
            ),
        ),
        digits_columns=(
            Column(
                "imagenet-r",
                "ImageNet-R Top-1 (%)",
                "n/a",
                note="ImageNet-R (renditions) and ImageNet-A (natural adversarial photos) have no digits version: n/a",
            ),
            Column("imagenet-a", "ImageNet-A Top-1 (%)", "n/a"),
            Column(
                "corruptions",
                "Corruptions mean error (%)",
                "mean-error",
                options={"shift": "corruptions", "corruptions": "common"},
                note="the corruption columns are ImageNet-C's corruptions generated from the clean digits "
                "(--shift corruptions: the 15 common, then the 4 extra) as the unnormalised mean top-1 "
                "error, lower is better: mCE divides by AlexNet's ImageNet errors and does not apply to digits",
            ),
            Column(
                "corruptions-extra",
                "Corruptions (Extra) mean error (%)",
                "mean-error",
                options={"shift": "corruptions", "corruptions": "extra"},
            ),
        ),
    )
)

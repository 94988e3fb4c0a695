"""Tables of Hosseini & Hosseini, "You Need to Pay Better Attention" (arXiv 2403.01643), listed in
docs/reproduce.md, "The tables".  The paper's ViT configurations are not published: its MNIST and
CIFAR-100 rows are robeval's ``mnist-vit*`` / ``cifar100-vit*`` and its ImageNet rows DeiT-tiny's, each
with the attention kind."""

from __future__ import annotations

from typing import Any

from .tables import Column, PaperTable, Row, register_table

HOSSEINI = 'Hosseini & Hosseini, "You Need to Pay Better Attention", arXiv 2403.01643'
ATTENTION_KINDS = (("Standard", ""), ("Optimised", "-optimised"), ("Efficient", "-efficient"), ("Super", "-super"))
KIND_ROWS = tuple(Row(label) for label, _ in ATTENTION_KINDS)


def _family(prefix: str) -> tuple[str, ...]:
    """``prefix`` with each attention kind, in row order (``mnist-vit``, ``mnist-vit-optimised``, ...)."""
    return tuple(f"{prefix}{suffix}" for _, suffix in ATTENTION_KINDS)


NO_CONFIG_NOTE = (
    "the paper's ViT configurations are not published: MNIST is robeval's mnist-vit (28x28 grey), CIFAR-100 "
    "cifar100-vit (32x32 RGB), ImageNet DeiT-tiny, each with the row's attention kind"
)
DIGITS_COLUMN_NOTE = (
    "one column, the digits DeiTs with each attention kind on the digits data, stands for the paper's three data sets"
)


def _per_attention_kind(name: str, title: str, where: str, kind: str, layout: str, **table: Any) -> PaperTable:
    """A table of Hosseini & Hosseini whose rows are the four attention kinds."""
    return register_table(
        PaperTable(
            name=name, title=title, source=f"{HOSSEINI}, {where}", kind=kind, rows=KIND_ROWS, layout=layout, **table
        )
    )


def _published(key: str, title: str, note: str = "") -> Column:
    """Top-1 on a published data set (``--data-for KEY=DIR``: the folder of its files; default --data-dir)."""
    return Column(key, title, "top1", data=key, published=key, models=_family(f"{key}-vit"), note=note)


_per_attention_kind(
    "hosseini-table-1",
    "Top-1 accuracy on MNIST, CIFAR-100 and ImageNet per attention kind (Table 1)",
    "Table 1",
    "accuracy-by-data",
    "runs-as-columns",
    protocol="standard",
    columns=(
        _published(
            "mnist", "MNIST Top-1 (%)", NO_CONFIG_NOTE + "; none has public weights: pass each model's --checkpoint"
        ),
        _published("cifar100", "CIFAR-100 Top-1 (%)"),
        Column("imagenet", "ImageNet Top-1 (%)", "top1", data="imagenet", models=_family("deit-tiny")),
    ),
    digits_columns=(
        Column("digits", "Digits (demo) Top-1 (%)", "top1", models=_family("digits-deit"), note=DIGITS_COLUMN_NOTE),
    ),
)

SEED_RUNS = 5  # the rebuttal's training runs per attention kind
SEED_NOTE = (
    f"each cell is the mean ± sample std of top-1 over the checkpoints given for the row's model (the paper: "
    f"{SEED_RUNS} training runs per attention kind); "
)


def _over_seeds(key: str, data: str) -> PaperTable:
    """The rebuttal's spread table for one data set: rows = the attention kinds, one column of mean ± std."""
    return _per_attention_kind(
        f"hosseini-std-{key}",
        f"Top-1 accuracy on {data} per attention kind, mean ± std over {SEED_RUNS} training runs (rebuttal)",
        f"rebuttal, standard deviations across {SEED_RUNS} runs ({data})",
        "accuracy-by-data",
        "runs-as-columns",
        protocol="standard",
        members=SEED_RUNS,
        columns=(_published(key, f"{data} Top-1 (%)", SEED_NOTE + NO_CONFIG_NOTE),),
        digits_columns=(
            Column(
                "digits",
                "Digits (demo) Top-1 (%)",
                "top1",
                models=_family("digits-deit"),
                note=SEED_NOTE + f"the digits DeiTs with each attention kind on the digits data stand for {data}",
            ),
        ),
    )


_over_seeds("mnist", "MNIST")
_over_seeds("cifar100", "CIFAR-100")

_per_attention_kind(
    "hosseini-edge-inference",
    "Inference time per image of each attention kind on a CPU (the edge-device table)",
    "edge-device inference-time table",
    "efficiency",
    "latency-as-columns",
    columns=(
        Column("mnist", "MNIST ViT (ms/image)", "latency-ms", models=_family("mnist-vit"), note=NO_CONFIG_NOTE),
        Column("cifar100", "CIFAR-100 ViT (ms/image)", "latency-ms", models=_family("cifar100-vit")),
        Column("imagenet", "DeiT-tiny (ms/image)", "latency-ms", models=_family("deit-tiny")),
    ),
    digits_columns=(
        Column(
            "digits",
            "Digits DeiT (ms/image)",
            "latency-ms",
            models=_family("digits-deit"),
            note=DIGITS_COLUMN_NOTE.replace("on the digits data", "(8x8 inputs)"),
        ),
    ),
    profile_options={"batch_size": 1, "device": "cpu", "memory": False},
)

register_table(
    PaperTable(
        name="swin-s-attention",
        title="Swin-S with standard, Optimised, Efficient and Super attention: top-1, parameters, accuracy per parameter",
        source=f"{HOSSEINI}, Swin-S table",
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

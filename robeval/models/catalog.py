"""Every model and attention kind robeval registers, as data (torch-free): facts, weights, options and
where the builder is (:class:`~.registry.Lazy`), so ``robeval models`` lists them and ``robeval run``
checks model names before torch loads.  The order here is the order ``robeval models`` and
``'digits-*'`` list them.

The image facts of the timm architectures are timm's own pretrained configs (:data:`TIMM_IMAGENET`;
tests/test_registries.py checks every one against timm's); the digits demo's are :data:`DIGITS`.
"""

from __future__ import annotations

from typing import Any

from ..model_config import IMAGENET_CONFIG, IMAGENET_MEAN, IMAGENET_STD, ModelConfig
from .registry import ATTENTION_KINDS, AttentionKind, Lazy, add_model, register_kind
from .weights import NO_WEIGHTS, Weights, embedded_weights, timm_weights

DEIT_SIZES = ("tiny", "small", "base")
# timm's pretrained config of every timm ImageNet architecture registered here (deit, distilled, swin)
TIMM_IMAGENET = ModelConfig((3, 224, 224), 1000, IMAGENET_MEAN, IMAGENET_STD, "bicubic", 0.9)
DIGITS_CFG: dict[str, Any] = dict(
    input_size=(1, 8, 8), mean=(0.5,), std=(0.5,), interpolation="nearest", crop_pct=1.0, num_classes=10
)
DIGITS = ModelConfig.from_cfg(DIGITS_CFG)  # every digits model's facts
DIGITS_DEIT = "(patch 2, dim 48, depth 3, 3 heads)"
# The model options of every elliptical model (one place: builders, registry and defaults read it).
ELLIPTICAL_OPTIONS = {"token_reduction": "mean", "grad_through_m": False}
ADAPTIVE_OPTIONS = {"grad_through_m": True}  # what an adaptive attack changes (--adaptive)
SPKDE_OPTIONS: dict[str, Any] = {"outlier_fraction": 0.1, "solver_iterations": 30, "grad_through_weights": False}
RKDE_OPTIONS: dict[str, Any] = {"iterations": 1, "huber_threshold": 0.2}
MOM_OPTIONS: dict[str, Any] = {"groups": 3}
HOSSEINI, HAN, ELLIPTICAL_ZOO = "Hosseini & Hosseini 2024", "Han et al. 2023", "Elliptical authors' robustness zoo"
HOSSEINI_KINDS = ("optimised", "efficient", "super")  # also in Swin's windows and the small ViTs
RVT_MASKED = {"tiny": 10, "small": 5, "base": 5}  # the _plus versions' first masked block (the authors')
SWIN_SIZES = ("tiny", "small")
VIT_LITE = "ViT-Lite-7/4"
CIFAR_MEAN, CIFAR_STD = (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)
MNIST_MEAN, MNIST_STD = (0.1307,), (0.3081,)
# data set -> (image side, channels, classes, mean, std): the small ViTs' data
SMALL_DATA: dict[str, tuple[int, int, int, tuple[float, ...], tuple[float, ...]]] = {
    "cifar10": (32, 3, 10, CIFAR_MEAN, CIFAR_STD),
    "cifar100": (32, 3, 100, CIFAR_MEAN, CIFAR_STD),
    "mnist": (28, 1, 10, MNIST_MEAN, MNIST_STD),
}
M = "robeval.models"


def small_config(data: str) -> dict[str, Any]:
    side, channels, classes, mean, std = SMALL_DATA[data]
    return dict(
        input_size=(channels, side, side),
        mean=mean,
        std=std,
        interpolation="nearest",
        crop_pct=1.0,
        num_classes=classes,
    )


def deit_arch(size: str) -> str:
    return f"deit_{size}_patch16_224"


def plain(name: str, builder: Lazy, family: str, description: str, config: ModelConfig, weights: Weights) -> None:
    """A model without options."""
    add_model(name, builder, family=family, weights=weights, config=config, options={}, description=description)


def elliptical(name: str, builder: Lazy, description: str, config: ModelConfig) -> None:
    """An elliptical model (no public weights; the elliptical options, adaptive ones included)."""
    add_model(
        name,
        builder,
        family="deit-elliptical",
        weights=NO_WEIGHTS,
        config=config,
        options=ELLIPTICAL_OPTIONS,
        adaptive=ADAPTIVE_OPTIONS,
        description=description,
    )


def with_kind(
    name: str, kind: AttentionKind, builder: Lazy, description: str, config: ModelConfig, weights: Weights = NO_WEIGHTS
) -> None:
    """A model whose attention is ``kind`` (the kind's options and package; no public weights unless given)."""
    add_model(
        name,
        builder,
        family=f"deit-{kind.name}",
        weights=weights,
        config=config,
        options=kind.options,
        adaptive=kind.adaptive,
        description=description,
        package=kind.package,
        attention=kind.name,
    )


def digits(name: str, family: str, builder: Lazy, description: str, **facts: Any) -> None:
    """A digits demo model: its weights ship embedded as ``robeval/zoo/<name>.safetensors``."""
    add_model(
        name,
        builder,
        family=family,
        weights=embedded_weights(name),
        config=DIGITS,
        description=description,
        options=facts.pop("options", {}),
        **facts,
    )


def family_names(kind_name: str) -> list[str]:
    """The models a kind gives: its digits demo and its DeiT at every size."""
    return [f"digits-deit-{kind_name}", *(f"deit-{size}-{kind_name}" for size in DEIT_SIZES)]


def digits_with_kind(kind: AttentionKind) -> None:
    """``digits-deit-<kind>``: the shipped kinds' weights are embedded; a plugin's come from train-demo."""
    name = f"digits-deit-{kind.name}"
    weights = embedded_weights(name) if kind.package == "robeval" else NO_WEIGHTS
    build = Lazy(f"{M}.vits:digits_variant_vit", {"kind": kind.name})
    with_kind(name, kind, build, f"digits DeiT with {kind.what} attention {DIGITS_DEIT}", DIGITS, weights)


def deits_with_kind(kind: AttentionKind) -> None:
    """``deit-<size>-<kind>`` at every size (no public weights)."""
    for size in DEIT_SIZES:
        arch = deit_arch(size)
        build = Lazy(f"{M}.attention.kinds:timm_with_attention", {"kind_name": kind.name, "arch": arch})
        description = f"{arch} with {kind.what} attention ({kind.source})"
        with_kind(f"deit-{size}-{kind.name}", kind, build, description, TIMM_IMAGENET)


def register_family(kind: AttentionKind) -> None:
    """Every model of ``kind`` (a kind registered after import: a plugin's)."""
    digits_with_kind(kind)
    deits_with_kind(kind)


def _kinds() -> None:
    A = f"{M}.attention"
    for kind in HOSSEINI_KINDS:
        register_kind(AttentionKind(kind, f"{A}.variants:{kind.capitalize()}Attention", kind, HOSSEINI))
    robust, kernel = f"{A}.robust:set_robust_options", f"{A}.kernel:set_spkde_options"
    register_kind(AttentionKind("rkde", f"{A}.robust:RKDEAttention", "robust-KDE (Huber)", HAN, RKDE_OPTIONS, robust))
    register_kind(AttentionKind("mom", f"{A}.robust:MoMAttention", "median-of-means", HAN, MOM_OPTIONS, robust))
    register_kind(AttentionKind("kde", f"{A}.kernel:KDEAttention", "KDE", ELLIPTICAL_ZOO))
    register_kind(
        AttentionKind(
            "spkde",
            f"{A}.kernel:SPKDEAttention",
            "scaled-and-projected KDE",
            ELLIPTICAL_ZOO,
            SPKDE_OPTIONS,
            kernel,
            adaptive={"grad_through_weights": True},
        )
    )
    register_kind(AttentionKind("fourier", f"{A}.kernel:FourierAttention", "FourierFormer", ELLIPTICAL_ZOO))
    register_kind(
        AttentionKind(
            "rvt", f"{A}.kernel:MaskedKeyNormAttention", "RVT-style (normalised keys, learned mask)", ELLIPTICAL_ZOO
        )
    )


def _deit() -> None:
    for size in DEIT_SIZES:
        arch = deit_arch(size)
        build, weights = Lazy(f"{M}.hub:timm_network", {"arch": arch}), timm_weights(arch, "ImageNet-1k")
        plain(f"deit-{size}", build, "deit", f"timm {arch}", TIMM_IMAGENET, weights)
        elliptical(
            f"deit-{size}-elliptical",
            Lazy(f"{M}.vits:elliptical_timm", {"arch": arch}),
            f"{arch} with elliptical attention in blocks 1..11",
            TIMM_IMAGENET,
        )
    digits("digits-deit", "deit", Lazy(f"{M}.vits:digits_vit"), f"DeiT for 8x8 digits {DIGITS_DEIT}")
    digits(
        "digits-deit-elliptical",
        "deit-elliptical",
        Lazy(f"{M}.vits:digits_vit", {"elliptical": True}),
        f"DeiT-Elliptical for 8x8 digits {DIGITS_DEIT}",
        options=ELLIPTICAL_OPTIONS,
        adaptive=ADAPTIVE_OPTIONS,
    )


def _attention_families() -> None:
    """Every kind's digits demo first, then every kind's DeiTs (the order the listing has always had)."""
    for kind in ATTENTION_KINDS.values():
        digits_with_kind(kind)
    for kind in ATTENTION_KINDS.values():
        deits_with_kind(kind)


def _distilled_and_rvt() -> None:
    for size in DEIT_SIZES:
        arch = f"deit_{size}_distilled_patch16_224"
        build, weights = Lazy(f"{M}.hub:timm_network", {"arch": arch}), timm_weights(arch, "ImageNet-1k")
        description = f"timm {arch}: class and distillation heads averaged"
        plain(f"deit-{size}-distilled", build, "deit-distilled", description, TIMM_IMAGENET, weights)
    digits(
        "digits-deit-distilled",
        "deit-distilled",
        Lazy(f"{M}.vits:digits_distilled_vit"),
        "distilled DeiT for 8x8 digits (teacher: digits-deit; heads averaged)",
    )
    for size, masked in RVT_MASKED.items():
        for plus in (False, True):
            what = f"RVT-{size[0].upper()}{'i' if size == 'tiny' else ''}{'*' if plus else ''}"
            add_model(
                f"rvt-{size}{'-plus' if plus else ''}",
                Lazy(f"{M}.rvt:rvt_network", {"size": size}),
                family="rvt",
                weights=Weights("none", note="the authors' releases load strictly"),
                config=ModelConfig.from_cfg(IMAGENET_CONFIG),
                options={"masked_block": masked if plus else 0},
                description=f"{what} (Mao et al. 2022){', position-aware attention scaling' if plus else ''}",
            )
    for plus in (False, True):
        digits(
            f"digits-rvt{'-plus' if plus else ''}",
            "rvt",
            Lazy(f"{M}.rvt:digits_rvt", {"plus": plus}),
            f"RVT{'*' if plus else ''} for 8x8 digits (width 48, depth 3, 3 heads, conv MLP"
            f"{', masks in blocks 0-1' if plus else ''})",
        )


def _small_vits() -> None:
    for data in SMALL_DATA:
        facts, vit = ModelConfig.from_cfg(small_config(data)), f"{VIT_LITE} for {data}"
        build = Lazy(f"{M}.vits:small_vit", {"data": data})
        plain(f"{data}-vit", build, "deit", f"{vit} (standard attention)", facts, NO_WEIGHTS)
        elliptical(
            f"{data}-vit-elliptical",
            Lazy(f"{M}.vits:small_vit", {"data": data, "elliptical": True}),
            f"{vit} with elliptical attention in blocks 1..6",
            facts,
        )
        for kind in map(ATTENTION_KINDS.require, HOSSEINI_KINDS):
            build = Lazy(f"{M}.vits:small_vit_with_kind", {"data": data, "kind": kind.name})
            with_kind(
                f"{data}-vit-{kind.name}", kind, build, f"{vit} with {kind.what} attention ({kind.source})", facts
            )


def _swin() -> None:
    for kind in (None, *HOSSEINI_KINDS):
        digits(
            "digits-swin" + (f"-{kind}" if kind else ""),
            f"swin-{kind}" if kind else "swin",
            Lazy(f"{M}.swin:digits_swin", {"kind": kind}),
            "Swin for 8x8 digits (patch 1, dim 24, depths 2+2, window 4)" + (f" with {kind} attention" if kind else ""),
        )
    for size in SWIN_SIZES:
        arch = f"swin_{size}_patch4_window7_224"
        for kind in (None, *HOSSEINI_KINDS):
            build = Lazy(f"{M}.swin:swin_network", {"arch": arch, "kind": kind})
            weights = timm_weights(arch, "ImageNet-1k") if kind is None else NO_WEIGHTS
            description = f"timm {arch}" + (f" with {kind} attention in its windows ({HOSSEINI})" if kind else "")
            name, family = f"swin-{size}" + (f"-{kind}" if kind else ""), f"swin-{kind}" if kind else "swin"
            plain(name, build, family, description, TIMM_IMAGENET, weights)


_kinds()
_deit()
_attention_families()
_distilled_and_rvt()
_small_vits()
_swin()

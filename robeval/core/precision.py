"""Crafting precision (``--precision``): how attacks run the model, while every counted prediction runs in
strict float32 (docs/speed.md, Crafting precision).  Strict float32 also means no bf16 matmuls in oneDNN on
CPUs (``torch.set_float32_matmul_precision("medium")`` turns them on) and no autocast a caller opened around
robeval.  PyTorch >= 2.9 has one attribute per backend (``fp32_precision``); older versions have
``allow_tf32`` and the global matmul precision, which are used there (mixing the two APIs is an error in
new versions).  Torch is imported inside the functions: the CLI checks ``--precision`` before torch loads.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Precision:
    name: str
    autocast: str | None  # the torch dtype name attacks' forward passes are autocast to, or None
    tf32: bool  # TF32 tensor-core matmuls and convolutions allowed while crafting
    gpu_only: bool
    help: str

    def autocast_dtype(self) -> Any:
        import torch

        return None if self.autocast is None else getattr(torch, self.autocast)

    @property
    def reduced(self) -> bool:
        """Crafting in less than float32: the run's white-box attacks are checked again in fp32."""
        return self.name != FP32


FP32 = "fp32"
PRECISIONS = {
    p.name: p
    for p in (
        Precision(FP32, None, False, False, "strict float32 everywhere (TF32 off)"),
        Precision("tf32", None, True, True, "TF32 tensor cores for crafting"),
        Precision("bf16", "bfloat16", False, False, "bfloat16 autocast for crafting"),
        Precision("fp16", "float16", False, True, "float16 autocast for crafting"),
    )
}


def get_precision(name: str, on_gpu: bool | None = None) -> Precision:
    """The precision ``name``; a UserError for an unknown one, or a GPU-only one off the GPU."""
    from .errors import UserError

    if name not in PRECISIONS:
        raise UserError(f"invalid --precision {name!r}: choose {', '.join(PRECISIONS)}")
    precision = PRECISIONS[name]
    if precision.gpu_only and on_gpu is False:
        raise UserError(f"--precision {name} needs a CUDA GPU ({precision.help}); on a CPU use bf16 or fp32")
    return precision


def slower_here(precision: Precision, device_type: str) -> str | None:
    """A warning when ``precision`` crafts slower than fp32 on this machine: bf16 on a CPU without
    bf16 instructions (AVX-512 BF16 or AMX), where oneDNN falls back to far slower kernels."""
    if precision.autocast != "bfloat16" or device_type != "cpu":
        return None
    import torch

    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    if any(getattr(torch.cpu, name, lambda: True)() for name in checks):
        return None
    return (
        "warning: this CPU has no bf16 instructions (AVX-512 BF16, AMX): --precision bf16 crafts several "
        "times slower than fp32 here (benchmarks/roofline.py)"
    )


def _settings(tf32: bool) -> list[tuple[Any, str, Any]]:
    """(object, attribute, value) for every backend switch of float32 math, in the API this torch has."""
    import torch

    backends: Any = torch.backends  # its submodules are typed loosely across versions
    if hasattr(backends.cuda.matmul, "fp32_precision"):
        fast = "tf32" if tf32 else "ieee"
        return [
            (backends.cuda.matmul, "fp32_precision", fast),
            (backends.cudnn.conv, "fp32_precision", fast),
            (backends.mkldnn.matmul, "fp32_precision", "ieee"),
            (backends.mkldnn.conv, "fp32_precision", "ieee"),
        ]
    return [(backends.cuda.matmul, "allow_tf32", tf32), (backends.cudnn, "allow_tf32", tf32)]  # pragma: no cover


AUTOCAST_DEVICES = ("cpu", "cuda")  # where a caller's own torch.autocast could be open around robeval


@contextmanager
def float32_math(tf32: bool = False) -> Iterator[None]:
    """Run a block with IEEE float32 matmuls and convolutions (``tf32``: TF32 allowed on GPUs) and
    with any autocast a caller opened around robeval switched off (``with torch.autocast("cuda"):
    robeval.evaluate(...)`` would otherwise count bf16 predictions), restoring what was set before.
    The crafting model's own autocast (``--precision bf16``) opens inside this block, as it should."""
    import torch

    settings = _settings(tf32)
    before = [getattr(obj, attr) for obj, attr, _ in settings]
    legacy = not hasattr(torch.backends.cuda.matmul, "fp32_precision")
    matmul = torch.get_float32_matmul_precision() if legacy else None
    no_autocast = ExitStack()
    try:
        for device in AUTOCAST_DEVICES:
            no_autocast.enter_context(torch.autocast(device, enabled=False))
        for obj, attr, value in settings:
            setattr(obj, attr, value)
        if legacy:  # pragma: no cover - torch < 2.9
            torch.set_float32_matmul_precision("high" if tf32 else "highest")
        yield
    finally:
        for (obj, attr, _), value in zip(settings, before):
            setattr(obj, attr, value)
        if matmul is not None:  # pragma: no cover
            torch.set_float32_matmul_precision(matmul)
        no_autocast.close()


def curves_omitted(precision: Precision) -> str | None:
    """Why a run crafting in ``precision`` records no convergence curves (None: it records them)."""
    if not precision.reduced:
        return None
    return (
        f"no convergence curves under --precision {precision.name}: the attacks' own passes are not the "
        "strict-fp32 passes the records count, so a curve would not end at the records' robust accuracy "
        "(a --precision fp32 run records them)"
    )

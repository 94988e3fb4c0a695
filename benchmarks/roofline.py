#!/usr/bin/env python
"""Where the time goes, against the machine's own limit: per attack and crafting precision, the
FLOP/s robeval's runs achieve as a fraction of this machine's dense matmul peak in that precision.

1. The peak: the best of several square matrix products (fp32 strict; bf16; on a GPU also TF32),
   2 n^3 FLOPs each.
2. The work: FLOPs of one forward pass and of one forward + input-gradient pass per image, counted
   by PyTorch's FlopCounterMode on the model (timm's fused attention switched off for the count so
   that Q K^T and A V are seen in both directions); the passes each attack spent come from the
   engine's own counters (the records' forward_passes / backward_passes).
3. The time: the engine's unit time of each attack (``run.json`` timings) on generated 224 px
   images, without the fp32 re-check that reduced precisions add (shown on its own).

Achieved FLOP/s = (forward passes x forward FLOPs + backward passes x (fwd+bwd - fwd FLOPs)) / time.
Ratios (bf16 over fp32 img/s) are measured side by side in one run; absolute figures vary with the
machine's load.

    .venv/bin/python benchmarks/roofline.py [--model deit-tiny] [--n 8] [--device cpu] [--attacks pgd,fgsm,square]
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import make_folder  # noqa: E402

from robeval.api import evaluate_full  # noqa: E402
from robeval.models import load_model  # noqa: E402
from robeval.precision import float32_math  # noqa: E402

SETTINGS = {  # budgets short enough for a CPU; PGD-20 is the paper's
    "pgd": {"steps": 20},
    "fgsm": {},
    "apgd-ce": {"n_iter": 20},
    "square": {"n_queries": 100},
    "spsa": {"iterations": 2, "samples": 32},
}


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_peak(dtype: torch.dtype, device: torch.device, n: int, tf32: bool = False, repeats: int = 5) -> float:
    """The best FLOP/s of an n x n matrix product in ``dtype``."""
    a, b = (torch.randn(n, n, device=device).to(dtype) for _ in range(2))
    best = float("inf")
    with float32_math(tf32=tf32):
        a @ b
        for _ in range(repeats):
            sync(device)
            tick = time.perf_counter()
            a @ b
            sync(device)
            best = min(best, time.perf_counter() - tick)
    return 2 * n**3 / best


def pass_flops(model_name: str, device: torch.device) -> tuple[float, float]:
    """FLOPs per image of a forward pass and of a forward + input-gradient pass."""
    model = copy.deepcopy(load_model(model_name, pretrained=False, device=device))
    for module in model.modules():
        if hasattr(module, "fused_attn"):
            module.fused_attn = False
    x = torch.rand(1, *model.meta.input_size, device=device, requires_grad=True)
    with FlopCounterMode(display=False) as counter:
        with torch.no_grad():
            model(x)
    forward = counter.get_total_flops()
    with FlopCounterMode(display=False) as counter:
        torch.autograd.grad(model(x).sum(), x)
    return float(forward), float(counter.get_total_flops())


def attack_rate(args, data: Path, attack: str, precision: str, flops: tuple[float, float]) -> dict:
    """One run of ``attack``: img/s and achieved FLOP/s of its crafting."""
    result = evaluate_full(
        models=args.model, weights="random", data=str(data), n_examples=args.n, batch_size=args.n, eps="4/255",
        attacks=attack, settings={attack: SETTINGS.get(attack, {})}, precision=precision, device=args.device,
    )
    key = f"{args.model}|4/255|{attack}"
    timings = result.run["timings_seconds"]
    check = timings.get(f"{key}|fp32-check", 0.0)
    seconds = timings[key] - check
    rec = result.records[result.records["attack"] == attack]
    fwd, bwd = float(rec["forward_passes"].sum()), float(rec["backward_passes"].sum())
    work = fwd * flops[0] + bwd * (flops[1] - flops[0])
    return {"img/s": args.n / seconds, "flop/s": work / seconds, "check s": check, "seconds": seconds,
            "passes": (fwd + bwd) / args.n}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="deit-tiny")
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--attacks", default="pgd,fgsm,apgd-ce,square")
    parser.add_argument("--precisions", default=None, help="default: fp32,bf16 (CPU); fp32,tf32,bf16 (GPU)")
    parser.add_argument("--matmul", type=int, default=None, help="matmul size for the peak (CPU 2048, GPU 8192)")
    args = parser.parse_args()
    device = torch.device(args.device)
    gpu = device.type == "cuda"
    precisions = (args.precisions or ("fp32,tf32,bf16" if gpu else "fp32,bf16")).split(",")
    n = args.matmul or (8192 if gpu else 2048)
    peaks = {"fp32": matmul_peak(torch.float32, device, n), "bf16": matmul_peak(torch.bfloat16, device, n)}
    if gpu:
        peaks["tf32"] = matmul_peak(torch.float32, device, n, tf32=True)
        peaks["fp16"] = matmul_peak(torch.float16, device, n)
    print(f"matmul peak on {device} ({torch.get_num_threads()} threads, n={n}): "
          + ", ".join(f"{p} {v / 1e9:,.1f} GFLOP/s" for p, v in peaks.items()))
    flops = pass_flops(args.model, device)
    print(f"{args.model}: {flops[0] / 1e9:.3f} GFLOPs forward, {flops[1] / 1e9:.3f} forward + input gradient per image")
    with tempfile.TemporaryDirectory() as tmp:
        make_folder(Path(tmp), args.n)
        rows = {(a, p): attack_rate(args, Path(tmp), a, p, flops) for a in args.attacks.split(",") for p in precisions}
    print(f"\n| attack | precision | img/s | passes/img | GFLOP/s | of {'/'.join(precisions)} peak | vs fp32 img/s "
          "| fp32 re-check s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for (attack, precision), r in rows.items():
        base = rows[(attack, "fp32")]["img/s"]
        print(f"| {attack} | {precision} | {r['img/s']:.2f} | {r['passes']:.0f} | {r['flop/s'] / 1e9:,.1f} | "
              f"{100 * r['flop/s'] / peaks[precision]:.0f}% | {r['img/s'] / base:.2f}x | {r['check s']:.1f} |")


if __name__ == "__main__":
    main()

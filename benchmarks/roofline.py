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
   images, without the fp32 re-check that reduced precisions add (its share of the attack's time shown
   on its own); compile time counts in it (``--compile``, default auto: on for CUDA).  The attacks of
   one budget run as one run per precision, whose graphs torch.compile made are shown.

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
from robeval.core.precision import float32_math  # noqa: E402
from robeval.models import load_model  # noqa: E402

SETTINGS = {  # budgets short enough for one short call; PGD-20 is the paper's
    "pgd": {"steps": 20},
    "fgsm": {},
    "apgd-ce": {"n_iter": 20},
    "apgd-t": {"n_iter": 20, "n_target_classes": 3},
    "fab-t": {"n_iter": 20, "n_target_classes": 3},
    "square": {"n_queries": 100},
    "spsa": {"iterations": 2, "samples": 32},
}


# Square, SPSA and the APGD / FAB family stop on examples they fool; a random-weight model's margins are
# tiny, so they get a budget small enough that they keep working.  The attacks of one budget run as one
# run (one model load, one set of compiled graphs, each attack's own unit time).
EPS = {"pgd": "4/255", "fgsm": "4/255", "apgd-ce": "0.0005", "apgd-t": "0.0005", "fab-t": "0.0005",
       "square": "0.0005", "spsa": "0.0005"}  # fmt: skip


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_peak(dtype: torch.dtype, device: torch.device, n: int, tf32: bool = False, seconds: float = 2.0) -> float:
    """The best FLOP/s of an n x n matrix product in ``dtype``, through ``F.linear`` as the models'
    layers run it (on a CPU without bf16 instructions ``a @ b`` in bf16 takes a far slower path),
    repeated for about ``seconds``."""
    a, b = (torch.randn(n, n, device=device).to(dtype) for _ in range(2))
    best, spent = float("inf"), 0.0
    with float32_math(tf32=tf32):
        torch.nn.functional.linear(a, b)
        while spent < seconds or best == float("inf"):
            sync(device)
            tick = time.perf_counter()
            torch.nn.functional.linear(a, b)
            sync(device)
            took = time.perf_counter() - tick
            best, spent = min(best, took), spent + took
    return 2 * n**3 / best


def pass_flops(model_name: str, device: torch.device) -> tuple[float, float]:
    """FLOPs per image of a forward pass and of a forward + input-gradient pass."""
    model = copy.deepcopy(load_model(model_name, pretrained=False, device=device))
    for module in model.modules():
        if hasattr(module, "fused_attn"):
            module.fused_attn = False
    x = torch.rand(1, *model.meta.input_size, device=device, requires_grad=True)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(x)
    forward = counter.get_total_flops()
    with FlopCounterMode(display=False) as counter:
        model(x).sum().backward()
    return float(forward), float(counter.get_total_flops())


def predicted_classes(args, data: Path) -> Path:
    """A --class-map giving each image's folder (one image per folder) the random-weight model's own
    clean prediction: every image is then correctly classified, so every attack has all of them to
    attack (Square and the APGD family skip misclassified ones)."""
    probe = evaluate_full(models=args.model, weights="random", data=str(data), n_examples=args.n,
                          batch_size=args.n, attacks="none", device=args.device).records.sort_values("example")
    folders = sorted(p.name for p in data.iterdir() if p.is_dir())
    class_map = data.parent / "class_map.txt"
    class_map.write_text("".join(f"{folders[e]} {p}\n" for e, p in zip(probe["example"], probe["adv_pred"])))
    return class_map


def group_rates(args, data: Path, attacks: list[str], precision: str, flops: tuple[float, float]) -> dict:
    """One run of ``attacks`` (one budget) in ``precision``: per attack its img/s, achieved FLOP/s, passes
    and fp32 re-check seconds, and the clean pass's img/s; the graphs torch.compile made for the run."""
    from robeval.evaluation.compiled import graphs_made

    before = graphs_made()
    result = evaluate_full(
        models=args.model, weights="random", data=str(data), n_examples=args.n, batch_size=args.n,
        eps=EPS[attacks[0]], attacks=",".join(attacks), settings={a: SETTINGS.get(a, {}) for a in attacks},
        precision=precision, device=args.device, class_map=str(args.class_map), compile=args.compile,
    )  # fmt: skip
    graphs, timings = graphs_made() - before, result.info["timings_seconds"]
    out = {}
    for attack in attacks:
        key = f"{args.model}|{EPS[attack]}|{attack}"
        check = timings.get(f"{key}|fp32-check", 0.0)
        seconds = timings[key] - check
        rec = result.records[result.records["attack"] == attack]
        fwd, bwd = float(rec["forward_passes"].sum()), float(rec["backward_passes"].sum())
        work = fwd * flops[0] + bwd * (flops[1] - flops[0])
        out[attack] = {"img/s": args.n / seconds, "flop/s": work / seconds, "check s": check, "seconds": seconds,
                       "passes": (fwd + bwd) / args.n, "fwd": fwd, "bwd": bwd, "graphs": graphs}  # fmt: skip
    clean = timings.get(f"{args.model}|{EPS[attacks[0]]}|clean", float("nan"))
    out["clean"] = {"img/s": args.n / clean if clean else float("nan"), "graphs": graphs}
    return out


def all_rates(args, data: Path, precisions: list[str], flops: tuple[float, float]) -> dict:
    """(attack, precision) -> its rates, each budget's attacks in one run per precision."""
    groups: dict[str, list[str]] = {}
    for attack in args.attacks.split(","):
        groups.setdefault(EPS[attack], []).append(attack)
    rows = {}
    for precision in precisions:
        for attacks in groups.values():
            found = group_rates(args, data, attacks, precision, flops)
            rows.update({(a, precision): r for a, r in found.items() if a != "clean" or ("clean", precision) not in rows})
            print(f"  ({precision}: {', '.join(attacks)} done)", flush=True)
    return rows


def suite_passes(digits_n: int = 100) -> dict[str, tuple[float, float]]:
    """Forward and backward passes per image of each suite attack at its full settings, counted by the
    engine on a digits run at 8/255 (whose robust accuracy, ~68%, sets how long early-stopping
    attacks keep working)."""
    digits = evaluate_full(models="digits-deit", eps="8/255", n_examples=digits_n).records
    return {
        attack: (float(sel["forward_passes"].mean()), float(sel["backward_passes"].mean()))
        for attack, sel in digits[digits["attack"] != "clean"].groupby("attack", sort=False)
    }


def table_e_hours(rows: dict, precision: str, passes: dict[str, tuple[float, float]]) -> tuple[float, dict[str, float]]:
    """Hours of the paper's Table E (2 models x 50,000 images x the seven attacks at their full
    settings) on this device at ``precision``: the passes per image each attack spends (counted by
    the engine on a digits run at 8/255) times the seconds per image pass measured above (a forward
    from Square, which only runs forwards; a backward from PGD, net of its forwards)."""
    square, pgd = rows[("square", precision)], rows[("pgd", precision)]
    t_fwd = square["seconds"] / square["fwd"]
    t_bwd = max(0.0, (pgd["seconds"] - pgd["fwd"] * t_fwd) / pgd["bwd"])
    per_attack = {attack: fwd * t_fwd + bwd * t_bwd for attack, (fwd, bwd) in passes.items()}
    return 2 * 50_000 * sum(per_attack.values()) / 3600, per_attack


def print_rows(rows: dict, precisions: list[str], peaks: dict, flops: tuple[float, float]) -> None:
    """The table: per attack and precision img/s, passes, achieved FLOP/s and its share of the peak, the
    ratio to fp32, the graphs compiled in its run and the fp32 re-check's share of the attack's time."""
    print(f"\n| attack | precision | img/s | passes/img | GFLOP/s | of {'/'.join(precisions)} peak | vs fp32 img/s "
          "| graphs compiled | fp32 re-check share |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for (attack, precision), r in rows.items():
        if attack == "clean":
            continue
        base, share = rows[(attack, "fp32")]["img/s"], r["check s"] / (r["seconds"] + r["check s"])
        print(f"| {attack} | {precision} | {r['img/s']:.2f} | {r['passes']:.0f} | {r['flop/s'] / 1e9:,.1f} | "
              f"{100 * r['flop/s'] / peaks[precision]:.0f}% | {r['img/s'] / base:.2f}x | {r['graphs']} | {share:.0%} |")
    for precision in precisions:
        clean = rows.get(("clean", precision), {}).get("img/s", float("nan"))
        print(f"clean forward, {precision}: {clean:,.0f} img/s ({100 * clean * flops[0] / peaks[precision]:.0f}% of its peak)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="deit-tiny")
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--attacks", default=None, help="default: pgd,fgsm,square (CPU); and apgd-ce (GPU)")
    parser.add_argument("--precisions", default=None, help="default: fp32,bf16 (CPU); fp32,tf32,bf16 (GPU)")
    parser.add_argument("--matmul", type=int, default=None, help="matmul size for the peak (CPU 2048, GPU 8192)")
    parser.add_argument("--estimate", action="store_true", help="also the Table E estimate from these rates")
    parser.add_argument("--compile", default="auto", help="robeval's --compile (auto: on for CUDA, off on the CPU)")
    args = parser.parse_args()
    device = torch.device(args.device)
    gpu = device.type == "cuda"
    precisions = (args.precisions or ("fp32,tf32,bf16" if gpu else "fp32,bf16")).split(",")
    args.attacks = args.attacks or ("pgd,apgd-ce,apgd-t,fab-t,square,spsa" if gpu else "pgd,fgsm,square")
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
        data = Path(tmp) / "val"
        make_folder(data, args.n, classes=args.n)
        args.class_map = predicted_classes(args, data)
        rows = all_rates(args, data, precisions, flops)
    print_rows(rows, precisions, peaks, flops)
    if args.estimate:
        passes = suite_passes()
        for precision in precisions:
            hours, per_attack = table_e_hours(rows, precision, passes)
            shares = ", ".join(f"{a} {s * 1e3:.1f} ms" for a, s in per_attack.items())
            print(f"Table E estimate ({args.model}, {precision}, 2 models x 50,000 images, one {device.type} device): "
                  f"{hours:,.1f} h (per image: {shares})")


if __name__ == "__main__":
    main()

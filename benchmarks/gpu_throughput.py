#!/usr/bin/env python
"""Benchmark 5: deit-small clean and PGD throughput on a GPU at each ``--precision``.

Generates an ImageFolder of 512 images and a random-weight deit-small checkpoint (nothing
downloads), then runs ``robeval run --attacks pgd`` for deit-small and deit-small-elliptical with
``--precision fp32``, ``bf16`` and (CUDA only) ``tf32`` and ``fp16`` and reads each run's
``run.json``: img/s of the clean pass and of PGD-20 (the attack, its final pass and the fp32
re-check of a sample), peak GPU memory allocated, and how many adversarial predictions the
crafting precision changes against fp32 on the same images (clean ones are counted in fp32: 0).
Finally the efficiency table, ``robeval profile --device cuda``.

    bash benchmarks/gpu.sh                          (runs this script among others)
    .venv/bin/python benchmarks/gpu_throughput.py --device cpu --images 16 --batch-size 8 --steps 2   (a dry run)

Paste the output into benchmarks/RESULTS.md with the date and the device.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import make_folder, random_checkpoint  # noqa: E402

MODELS = ["deit-small", "deit-small-elliptical"]  # elliptical attention adds no parameters: one checkpoint


def robeval(*args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "robeval", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"robeval {' '.join(args)} failed:\n{proc.stderr}")


def predictions(store: Path, run_id: str) -> dict[tuple[str, str, int], int]:
    from robeval.store import Store

    records = Store(store).records(run_id)
    return {(r.model, r.attack, r.example): r.adv_pred for r in records.itertuples()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--images", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--steps", type=int, default=20, help="PGD steps")
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    import torch

    cuda = args.device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        raise SystemExit("no CUDA GPU here; for a dry run use --device cpu")
    work = args.work or Path(tempfile.mkdtemp(prefix="robeval-gpu-"))
    data = work / "val"
    if not data.exists():
        make_folder(data, args.images)
    ckpt = random_checkpoint(work / "deit_small_random.pth", "deit_small_patch16_224")
    store = work / "gpu.sqlite"
    name = torch.cuda.get_device_name(0) if cuda else "CPU"
    print(f"device: {name}; torch {torch.__version__}; {args.images} generated 224x224 images, batch {args.batch_size}, "
          f"PGD-{args.steps} at eps 1/255")
    print("| model | --precision | clean img/s | PGD img/s | peak GPU MB | changed clean / PGD predictions vs fp32 | command s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    reference: dict[str, dict] = {}
    for amp in ["fp32", "bf16"] + (["tf32", "fp16"] if cuda else []):
        out = work / f"out-{amp}"
        tick = time.perf_counter()
        robeval("run", *[a for m in MODELS for a in ("-m", m)], *[a for m in MODELS for a in ("--checkpoint", f"{m}={ckpt}")],
                "--data", str(data), "--attacks", "pgd", "--set", f"pgd.steps={args.steps}", "--eps", "1/255",
                "--batch-size", str(args.batch_size), "--device", args.device, "--precision", amp, "--quiet",
                "--store", str(store), "--out", str(out))
        wall = time.perf_counter() - tick
        run = json.loads((out / "run.json").read_text())
        preds = predictions(store, run["run_id"])
        if amp == "fp32":
            reference = preds
        n = run["data"]["n"]
        for model in MODELS:
            t = run["timings_seconds"]
            changed = []
            for attack in ("clean", "pgd"):
                keys = [k for k in preds if k[0] == model and k[1] == attack]
                changed.append(sum(preds[k] != reference.get(k) for k in keys) / max(len(keys), 1))
            gpu = run["peak_memory_MB"].get("gpu_allocated")
            print(f"| {model} | {amp} | {n / t[f'{model}|1/255|clean']:,.1f} | {n / t[f'{model}|1/255|pgd']:,.1f} | "
                  f"{'n/a' if gpu is None else f'{gpu:,.0f}'} | {100 * changed[0]:.1f}% / {100 * changed[1]:.1f}% | {wall:.1f} |")
    print()
    robeval("profile", *[a for m in MODELS for a in ("-m", m)], "--device", args.device,
            "--batch-size", str(args.batch_size), "--out", str(work / "profile.md"))
    print((work / "profile.md").read_text())


if __name__ == "__main__":
    main()

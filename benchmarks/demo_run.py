"""Where the demo run's time goes (issue 33: `make run`'s run at most 2 minutes on 2 cores).

Two measurements, side by side in one process:

1. SPSA's pass size.  SPSA evaluates its +/- pairs in passes of at most ``spsa.max_batch`` images; on
   8x8 digits the per-image cost of a forward pass depends on the pass size through the CPU caches.
   Prints the per-image forward time of both demo models at several pass sizes (interleaved repeats,
   median) and each size's ratio to the default.
2. The demo run itself: ``robeval run`` with its defaults (and with ``--n-examples`` of
   ``--compare-n``), in-process, the seconds per attack over both models from ``run.json``'s
   ``timings_seconds``, with the model passes per image each attack made.

    .venv/bin/python benchmarks/demo_run.py                 # both parts, the default demo size
    .venv/bin/python benchmarks/demo_run.py --compare-n 100 # also the earlier size, 100 digits
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import interleaved_samples  # noqa: E402

from robeval import DEFAULT_MODELS, DEFAULT_N_EXAMPLES  # noqa: E402
from robeval.attacks import ATTACKS  # noqa: E402
from robeval.models import load_model  # noqa: E402

PASS_SIZES = (256, 512, 1024, 2048, 8192)


def passes_of(size: int) -> int:
    """How many forward passes of ``size`` images one timed call makes (16,384 images in all)."""
    return max(1, 16384 // size)


def forward_passes(model: torch.nn.Module, size: int) -> None:
    """Inference-mode forward passes of ``size`` random digits, :func:`passes_of` times."""
    x = torch.rand(size, 1, 8, 8)
    with torch.inference_mode():
        for _ in range(passes_of(size)):
            model(x)


def pass_sizes(repeats: int) -> None:
    default = ATTACKS.require("spsa").defaults["max_batch"]
    print(f"SPSA pass size (spsa.max_batch, default {default}): forward microseconds per image, median of {repeats}")
    for name in DEFAULT_MODELS:
        model = load_model(name)
        samples = interleaved_samples({s: lambda s=s, m=model: forward_passes(m, s) for s in PASS_SIZES}, repeats)
        medians = {s: statistics.median(ts) / (passes_of(s) * s) for s, ts in samples.items()}
        base = medians[default]
        cells = ", ".join(f"{s}: {1e6 * t:.1f} us ({t / base:.2f}x)" for s, t in medians.items())
        print(f"  {name}: {cells}")


def demo_run(n_examples: int, workdir: Path) -> None:
    from typer.testing import CliRunner

    from robeval.cli import app

    out = workdir / f"n{n_examples}"
    args = ["run", "--n-examples", str(n_examples), "--store", str(out / "s.sqlite"), "--out", str(out)]
    tick = time.perf_counter()
    result = CliRunner().invoke(app, args)
    wall = time.perf_counter() - tick
    if result.exit_code != 0:
        raise SystemExit(f"robeval run failed: {result.output[-2000:]}")
    run = json.loads((out / "run.json").read_text())
    per_attack: dict[str, float] = defaultdict(float)
    for key, seconds in run["timings_seconds"].items():
        per_attack[key.split("|")[-1]] += seconds
    passes = run["passes_per_image"]
    print(f"demo run, {n_examples} digits, both demo models: {wall:.1f} s in-process ({run['seconds']:.1f} s in run.json)")
    for attack, seconds in sorted(per_attack.items(), key=lambda kv: -kv[1]):
        fwd = [by_eps[attack]["forward"] for model in passes.values() for by_eps in model.values() if attack in by_eps]
        share = seconds / run["seconds"]
        print(f"  {attack:8s} {seconds:6.1f} s ({share:4.0%})  forward passes per image {', '.join(f'{f:,.0f}' for f in fwd)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--compare-n", type=int, nargs="*", default=[], help="also run the demo at these sizes")
    parser.add_argument("--skip-pass-sizes", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(0)
    if not args.skip_pass_sizes:
        pass_sizes(args.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        for n in [DEFAULT_N_EXAMPLES, *args.compare_n]:
            demo_run(n, Path(tmp))


if __name__ == "__main__":
    main()

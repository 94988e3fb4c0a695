#!/usr/bin/env python
"""``--compile on`` against ``--compile off`` on this machine, compile time included (issue 53).

Each contender is a whole run in a process of its own (torch.compile's state does not carry over), in
turn, in alternating order; ``on`` once with an empty inductor cache (cold: every kernel built) and once
with the cache the cold run filled (warm: what a second run of the same shapes pays).  Prints per case
the wall seconds of each, the ratios to ``off``, the graphs compiled, and whether the records are equal.

* ``demo``: the two digits demo models under FGSM, PGD-20, APGD-CE (100 iterations) and Square (1,000
  queries) on 100 digits, batch 100, one thread;
* ``deit-tiny``: deit-tiny at 224 px with random weights on 32 generated images (a folder of JPEGs),
  FGSM and PGD-5, batch 16, two threads.

    .venv/bin/python benchmarks/compile_cpu.py [--case demo] [--case deit-tiny]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RUN = """
import json, sys, robeval
from robeval.evaluation.compiled import graphs_made
run = robeval.evaluate_full(**json.loads(sys.argv[1]))
keys = ["model", "eps", "attack", "example"]
records = run.records.sort_values(keys)[keys + ["adv_top1", "adv_top5", "adv_pred"]].to_dict("list")
print(json.dumps({"graphs": graphs_made(), "records": records}))
"""


def case_options(case: str, folder: Path) -> dict:
    if case == "demo":
        return dict(models=["digits-deit", "digits-deit-elliptical"], n_examples=100, batch_size=100, threads=1,
                    attacks="fgsm,pgd,apgd-ce,square", settings={"square": {"n_queries": 1000}})  # fmt: skip
    return dict(models=["deit-tiny"], weights="random", data=str(_images(folder)), n_examples=32, batch_size=16,
                threads=2, attacks="fgsm,pgd", settings={"pgd": {"steps": 5}}, eps="1/255")  # fmt: skip


def _images(folder: Path) -> Path:
    """32 generated 256 px JPEGs in ImageNet's layout (one wnid folder)."""
    from PIL import Image

    root = folder / "val" / "n01440764"
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(32):
        Image.fromarray(rng.integers(0, 255, (256, 256, 3), dtype=np.uint8)).save(root / f"{i}.JPEG")
    return root.parent


def timed(options: dict, compile_mode: str, cache: Path) -> tuple[float, dict]:
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache))
    tick = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", RUN, json.dumps({**options, "compile": compile_mode})],
                          capture_output=True, text=True, env=env, check=True)  # fmt: skip
    return time.perf_counter() - tick, json.loads(done.stdout.strip().splitlines()[-1])


def compare(case: str, folder: Path) -> None:
    options = case_options(case, folder)
    cache = folder / f"inductor-{case}"
    off, base = timed(options, "off", cache)
    cold, made = timed(options, "on", cache)
    warm, again = timed(options, "on", cache)
    off2, _ = timed(options, "off", cache)
    eager = (off + off2) / 2
    print(f"{case}: {options['models']} {options['attacks']} n={options['n_examples']} batch {options['batch_size']}, "
          f"{options['threads']} thread(s)")  # fmt: skip
    print(f"  off {off:7.1f} s, {off2:7.1f} s (mean {eager:.1f})")
    print(f"  on, cold cache {cold:7.1f} s ({cold / eager:.2f}x), graphs compiled {made['graphs']}")
    print(f"  on, warm cache {warm:7.1f} s ({warm / eager:.2f}x), graphs compiled {again['graphs']}")
    same = base["records"] == made["records"] == again["records"]
    differ = sum(a != b for a, b in zip(base["records"]["adv_pred"], made["records"]["adv_pred"]))
    print(f"  records equal to off: {same} ({differ} of {len(base['records']['adv_pred'])} predictions differ)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", action="append", choices=("demo", "deit-tiny"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for case in args.case or ["demo", "deit-tiny"]:
            compare(case, Path(folder))


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""Thread policy: one robeval run alone vs two started together, under each candidate policy.

Each candidate is a set of command-line options and environment variables for
``robeval run -n 60 --attacks fgsm,pgd,apgd-ce,square --set square.n_queries=300`` (the run of
issue 12).  For each candidate the script times one run alone and two runs started at the same
moment (the time until both finished), interleaving the candidates so drift hits them alike, and
prints the median over repeats and two ratios: against the best single run of any candidate (the
cost on a free machine) and two-together over one-alone for the same candidate (the target is
<= 2.0x on this 2-core machine: two runs share the cores, so 2x is what perfect sharing costs).

    .venv/bin/python benchmarks/threads.py [--repeats 2]

``default`` is what ``robeval run`` does with no ``--threads`` (robeval/threads.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

CANDIDATES: dict[str, tuple[list[str], dict[str, str]]] = {
    "default (robeval)": ([], {}),
    "2 threads, OpenMP spin (torch's default)": (["--threads", "2"], {}),
    "1 thread": (["--threads", "1"], {}),
    "2 threads, passive wait": (["--threads", "2"], {"OMP_WAIT_POLICY": "PASSIVE"}),
    "2 threads, spin 10k": (["--threads", "2"], {"GOMP_SPINCOUNT": "10000"}),
}
RUN = ["run", "-n", "60", "--attacks", "fgsm,pgd,apgd-ce,square", "--set", "square.n_queries=300", "--quiet"]
CLEAN_ENV = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "MKL_NUM_THREADS")


def start(options: list[str], env: dict[str, str], work: str, tag: str) -> subprocess.Popen:
    full_env = {k: v for k, v in os.environ.items() if k not in CLEAN_ENV}
    full_env.update(env)
    cmd = [sys.executable, "-m", "robeval", *RUN, *options, "--store", f"{work}/{tag}.sqlite", "--out", f"{work}/{tag}"]
    return subprocess.Popen(cmd, env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def timed(procs: list[subprocess.Popen]) -> float:
    tick = time.perf_counter()
    for p in procs:
        _, err = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"robeval failed:\n{err}")
    return time.perf_counter() - tick


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="robeval-threads-")
    alone: dict[str, list[float]] = {c: [] for c in CANDIDATES}
    together: dict[str, list[float]] = {c: [] for c in CANDIDATES}
    for r in range(args.repeats):
        for name, (options, env) in CANDIDATES.items():
            tick = time.perf_counter()
            alone[name].append(timed([start(options, env, work, f"a{r}")]))
            together[name].append(timed([start(options, env, work, f"b{r}"), start(options, env, work, f"c{r}")]))
            print(f"  repeat {r + 1}: {name}: {alone[name][-1]:.1f} s alone, {together[name][-1]:.1f} s two together "
                  f"({time.perf_counter() - tick:.0f} s)", file=sys.stderr)
    best_alone = min(statistics.median(v) for v in alone.values())
    print(f"robeval {' '.join(RUN)}; {os.cpu_count()} cores; median of {args.repeats}")
    print(f"{'policy':42s} {'one alone':>10s} {'two together':>13s} {'alone/best':>11s} {'together/alone':>15s}")
    for name in CANDIDATES:
        a, t = statistics.median(alone[name]), statistics.median(together[name])
        print(f"{name:42s} {a:9.1f}s {t:12.1f}s {a / best_alone:10.2f}x {t / a:14.2f}x")


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""One minimum-norm run against PGD at four eps values (issue 16): ``--attacks fmn`` searches once per
batch and reads robust accuracy at every eps from that search, where a fixed-eps attack runs once per eps.

Contenders, run interleaved (benchmarks/_timing.py), digits demo, the 449 test images, two models:

* ``fmn``: ``--attacks fmn --eps 2/255,4/255,8/255,16/255`` (one 50-step search per batch);
* ``pgd x4``: ``--attacks pgd`` (PGD-20) at the same four eps.

Prints the time ratio ``fmn / pgd x4`` and, from the same runs, how far FMN's robust top-1 lies from
PGD's at each eps (a cheap curve must not be a weak one).  Then, once each, the settings robeval
chose: FMN with foolbox's default gamma (0.05) at the same 50 steps, and in L2 (eps 1.0, 100 images)
how many examples FMN and FAB-MN never fool against PGD's robust accuracy.

    .venv/bin/python benchmarks/minimum_norm.py [--repeats 3]
"""

from __future__ import annotations

import argparse

from _timing import interleaved_samples, paired_ratio

import robeval

EPS = "2/255,4/255,8/255,16/255"
MODELS = ["digits-deit", "digits-deit-elliptical"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    common = dict(models=MODELS, n_examples=449, eps=EPS, threads=2)
    results = {}

    def run(attack: str):
        results[attack] = robeval.evaluate_full(attacks=attack, **common).summary
        return results[attack]

    samples = interleaved_samples({"fmn": lambda: run("fmn"), "pgd x4": lambda: run("pgd")}, repeats=args.repeats, warmup=1)
    for name, times in samples.items():
        print(f"  {name:8s} median {sorted(times)[len(times) // 2]:.2f} s")
    ratio, low, high = paired_ratio(samples, "fmn", "pgd x4")
    print(f"one FMN run / PGD at four eps = {ratio:.2f}x ({low:.2f}-{high:.2f})")
    print_gaps("FMN", results["fmn"], results["pgd"])
    foolbox_gamma = robeval.evaluate_full(attacks="fmn", settings={"fmn": {"gamma": 0.05}}, **common).summary
    print_gaps("FMN with foolbox's gamma 0.05", foolbox_gamma, results["pgd"])
    l2 = robeval.evaluate_full(models="digits-deit", attacks="pgd,fmn,fab-mn", norm="L2", eps="1.0", n_examples=100,
                               threads=2)
    never = l2.records[l2.records["attack"].isin(["fmn", "fab-mn"])].groupby("attack")["min_norm"]
    pgd_l2 = l2.summary.set_index("attack").loc["pgd", "top1"]
    print(f"L2, digits-deit, 100 images: never fooled by FMN {int(never.apply(lambda v: (v == float('inf')).sum())['fmn'])}, "
          f"by FAB-MN {int(never.apply(lambda v: (v == float('inf')).sum())['fab-mn'])}; PGD top-1 at L2 1.0: {pgd_l2:.2f}%")


def print_gaps(title: str, search, pgd) -> None:
    search, pgd = (s.set_index(["model", "eps", "attack"])["top1"] for s in (search, pgd))
    for model in MODELS:
        gaps = ", ".join(f"{e} {search[(model, e, 'fmn')] - pgd[(model, e, 'pgd')]:+.2f}" for e in EPS.split(","))
        print(f"  {model}: {title} top-1 minus PGD top-1 (points) at {gaps}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""Transfer attacks reuse the source model's images across targets (issue 16): a run with N targets
should cost one crafting pass on the source plus N evaluations, not N crafting passes.

Contenders, run interleaved (benchmarks/_timing.py), digits demo, PGD-20 at 8/255, 100 images:

* ``transfer xN``: ``--attacks transfer-pgd --source-model digits-deit`` with N target models;
* ``craft``: white-box PGD on the source alone (the crafting pass, plus its clean pass);
* ``evaluate``: a clean-only run of the N targets (their evaluations).

Prints ``transfer xN / (craft + evaluate)`` (1.0 = crafted once) next to ``transfer xN / (N x craft)``
(what crafting per target would cost).

    .venv/bin/python benchmarks/transfer.py [--repeats 3]
"""

from __future__ import annotations

import argparse

from _timing import interleaved_samples, paired_ratio

import robeval

TARGETS = ["digits-deit", "digits-deit-elliptical", "digits-deit-super", "digits-deit-efficient"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    common = dict(n_examples=100, eps="8/255", threads=2)
    contenders = {
        "transfer": lambda: robeval.evaluate_full(models=TARGETS, attacks="transfer-pgd", source_model="digits-deit", **common),
        "craft": lambda: robeval.evaluate_full(models="digits-deit", attacks="pgd", **common),
        "evaluate": lambda: robeval.evaluate_full(models=TARGETS, attacks="none", **common),
    }
    samples = interleaved_samples(contenders, repeats=args.repeats, warmup=1)
    samples["craft + evaluate"] = [c + e for c, e in zip(samples["craft"], samples["evaluate"])]
    samples["N x craft"] = [len(TARGETS) * c for c in samples["craft"]]
    for name, times in samples.items():
        print(f"  {name:18s} median {sorted(times)[len(times) // 2]:.2f} s")
    once, low, high = paired_ratio(samples, "transfer", "craft + evaluate")
    each, _, _ = paired_ratio(samples, "transfer", "N x craft")
    print(f"{len(TARGETS)} targets: transfer run / (one crafting pass + {len(TARGETS)} evaluations) = {once:.2f}x "
          f"({low:.2f}-{high:.2f}); / ({len(TARGETS)} crafting passes) = {each:.2f}x")


if __name__ == "__main__":
    main()

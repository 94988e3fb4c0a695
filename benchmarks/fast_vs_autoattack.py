#!/usr/bin/env python
"""robeval --protocol fast and --cascade against AutoAttack's own run_standard_evaluation, side by side.

Per (model, eps, n), on the digits demo's first n balanced test examples (449: the whole test split),
three sides on the same images, seed 0, all n in one batch, one thread:

* ``autoattack``: AutoAttack's ``run_standard_evaluation`` (version standard: APGD-CE, APGD-T, FAB-T,
  Square at their defaults), images in [0,1], the normalisation inside the model;
* ``cascade``: robeval's engine, ``evaluate_full(protocol="standard", attacks=AutoAttack's four,
  cascade=True)``: AutoAttack's worst case the way robeval runs it;
* ``fast``: robeval's engine, ``evaluate_full(protocol="fast")``: the pass, the audit, any escalation
  (docs/protocols.md).

All three call one counting wrapper around the network (robeval's PassCounter: images sent forward,
images whose gradient flowed back), so every side's count holds everything it did: AutoAttack's own
checks, robeval's model checks.  For the robeval sides the run's records say the same less those
checks and, in a fast run, less the second pass's clean pass of each batch (the records count the clean
pass once): printed as the cross-check.  Prints per case each side's robust accuracy and passes, the
ratios to AutoAttack's in forward+backward image-passes and in forward + 2 x backward (a backward
costs about two forwards: closer to wall time), the per-example table fast against AutoAttack (fooled
by both / AutoAttack only / fast only / neither) and how many examples cascade and AutoAttack disagree
on, then the fast run's audit line and bound (its summary's ``audit`` and ``aa_bound``) and whether
the bound is at most AutoAttack's robust accuracy.  ``--time`` instead times the three sides,
repeats interleaved in alternating order, and prints median and quartiles of the paired wall-time
ratios fast/AutoAttack and cascade/AutoAttack (for a quiet machine).

    .venv/bin/python benchmarks/fast_vs_autoattack.py [--models digits-deit,digits-deit-elliptical]
        [--eps 8/255,16/255] [--n 100,449] [--seed 0] [--threads 1] [--device cpu]
    .venv/bin/python benchmarks/fast_vs_autoattack.py --time [--repeats 5] [--n 449] ...
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch
from pyautoattack import AutoAttack

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import interleaved_samples, paired_ratio  # noqa: E402

import robeval  # noqa: E402
from robeval.api import evaluate_full  # noqa: E402
from robeval.core.eps import parse_one  # noqa: E402
from robeval.core.records import audited_stage  # noqa: E402
from robeval.data.digits import digits_split, load_digits_data  # noqa: E402
from robeval.evaluation.attack_guards import PassCounter  # noqa: E402
from robeval.evaluation.protocols import autoattack_options  # noqa: E402
from robeval.models.given import GivenItem  # noqa: E402
from robeval.results_api import Run  # noqa: E402


class SharedCounter(PassCounter):
    """robeval's PassCounter, one for all sides.  robeval evaluates a copy of a module given to it; this
    one's copy is itself, so the engine's calls count here as AutoAttack's do."""

    def __deepcopy__(self, memo: dict) -> SharedCounter:
        return self


@dataclass(frozen=True)
class Passes:
    forward: int = 0
    backward: int = 0

    @property
    def total(self) -> int:
        return self.forward + self.backward

    @property
    def weighted(self) -> int:
        return self.forward + 2 * self.backward


@dataclass
class Side:
    robust: set[int]  # examples (data-set indices) robust at the end
    passes: Passes  # the counter's
    run: Run | None = None  # robeval's run (None: AutoAttack's side)

    def recorded(self) -> Passes | None:
        """The passes the run's records hold (the audit units' are in their stages' records already)."""
        if self.run is None:
            return None
        records = self.run.records
        records = records[[audited_stage(a) is None for a in records["attack"]]]
        return Passes(int(records["forward_passes"].sum()), int(records["backward_passes"].sum()))


@dataclass
class Case:
    model_name: str
    eps_text: str
    examples: list[int]
    x: torch.Tensor
    y: torch.Tensor
    counter: SharedCounter
    args: argparse.Namespace

    def options(self) -> dict:
        """The run options both robeval sides share (AutoAttack's: one batch, its seed)."""
        args = self.args
        return dict(eps=self.eps_text, n_examples=len(self.examples), batch_size=len(self.examples),
                    seed=args.seed, threads=args.threads, device=args.device)


def make_case(model_name: str, eps_text: str, n: int, args: argparse.Namespace) -> Case:
    examples = [int(e) for e in load_digits_data(n).indices]
    images, labels = digits_split("test")
    x = torch.from_numpy(images[examples]).to(args.device)
    y = torch.from_numpy(labels[examples]).to(args.device)
    model = robeval.load_model(model_name, device=torch.device(args.device)).eval().requires_grad_(False)
    return Case(model_name, eps_text, examples, x, y, SharedCounter(model), args)


def counted(case: Case, call) -> tuple[object, Passes]:
    case.counter.reset()
    out = call()
    return out, Passes(case.counter.forward_images, case.counter.backward_images)


def run_autoattack(case: Case) -> Side:
    adversary = AutoAttack(case.counter, eps=parse_one(case.eps_text).value, norm="Linf", seed=case.args.seed,
                           version="standard", device=case.x.device)
    adversary.verbose = False
    (x_adv, _), passes = counted(case, lambda: adversary.run_standard_evaluation(case.x, case.y, batch_size=len(case.y)))
    with torch.no_grad():
        robust = (case.counter.net(x_adv).argmax(1) == case.y).tolist()
    return Side({e for e, ok in zip(case.examples, robust) if ok}, passes)


def run_robeval(case: Case, **options) -> Side:
    """One robeval run through its library API on the counted network; its examples' final outcomes."""
    model = GivenItem((case.counter, robeval.ModelConfig(input_size=tuple(case.x.shape[1:]))), case.model_name)
    run, passes = counted(case, lambda: evaluate_full(models=[model], **case.options(), **options))
    assert isinstance(run, Run)
    outcome = run.records.groupby("example")["adv_top1"].agg(lambda hits: bool(hits.astype(bool).all()))
    if sorted(int(e) for e in outcome.index) != sorted(case.examples):
        raise SystemExit(f"robeval's run took other examples than {len(case.examples)} balanced digits")
    return Side({int(e) for e, ok in outcome.items() if ok}, passes, run)


SIDES = {
    "autoattack": run_autoattack,
    "cascade": partial(run_robeval, **autoattack_options("standard"), cascade=True),
    "fast": partial(run_robeval, protocol="fast"),
}


def passes_line(name: str, side: Side, aa: Side, n: int) -> str:
    line = (f"  {name:10s} robust {100 * len(side.robust) / n:5.1f}%  forward {side.passes.forward:9d}  backward "
            f"{side.passes.backward:9d}")
    if side is aa:
        return line
    line += (f"  / AutoAttack's {side.passes.total / aa.passes.total:.3f}x "
             f"(fwd+2bwd {side.passes.weighted / aa.passes.weighted:.3f}x)")
    recorded = side.recorded()
    assert recorded is not None
    return line + f"; its records: forward {recorded.forward}, backward {recorded.backward}"


def agreement(n: int, aa_robust: set[int], fast_robust: set[int]) -> str:
    both = n - len(aa_robust | fast_robust)
    aa_only, fast_only = len(fast_robust - aa_robust), len(aa_robust - fast_robust)
    return (f"fooled by both {both}, by AutoAttack only {aa_only}, by fast only {fast_only}, by neither "
            f"{len(aa_robust & fast_robust)}")


def bound_lines(fast: Run, aa_robust: float) -> list[str]:
    """The fast run's audit line and its bound against AutoAttack's robust accuracy (in %)."""
    row = fast.summary.iloc[0]
    lines = [f"  audit: {row['audit']}"]
    bound = float(row["aa_bound"])
    if math.isnan(bound):
        return [*lines, "  bound: none needed (everything escalated: the result is AutoAttack's)"]
    ok = "yes" if bound <= aa_robust + 1e-9 else "NO"
    return [*lines, f"  bound {bound:.2f}% <= AutoAttack's robust accuracy {aa_robust:.2f}%: {ok}"]


def measure(case: Case) -> None:
    sides = {name: side(case) for name, side in SIDES.items()}
    aa, fast, n = sides["autoattack"], sides["fast"], len(case.examples)
    print(f"{case.model_name} eps {case.eps_text} n {n} (seed {case.args.seed}, one batch, {case.args.threads} "
          f"thread(s), {case.args.device})")
    for name, side in sides.items():
        print(passes_line(name, side, aa, n))
    print(f"  fast against AutoAttack: {agreement(n, aa.robust, fast.robust)}; cascade and AutoAttack disagree "
          f"on {len(sides['cascade'].robust ^ aa.robust)}")
    assert fast.run is not None
    print("\n".join(bound_lines(fast.run, 100 * len(aa.robust) / n)), flush=True)


def time_case(case: Case, repeats: int) -> None:
    samples = interleaved_samples({name: partial(side, case) for name, side in SIDES.items()}, repeats, warmup=0)
    medians = {name: sorted(ts)[len(ts) // 2] for name, ts in samples.items()}
    shown = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in medians.items())
    print(f"{case.model_name} eps {case.eps_text} n {len(case.examples)}: median {shown} ({repeats} interleaved "
          f"repeats, {case.args.threads} thread(s), {case.args.device})")
    for name in ("fast", "cascade"):
        ratio, q1, q3 = paired_ratio(samples, name, "autoattack")
        print(f"  {name} / AutoAttack wall time {ratio:.3f}x (quartiles {q1:.3f}-{q3:.3f})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="digits-deit,digits-deit-elliptical")
    parser.add_argument("--eps", default="8/255,16/255")
    parser.add_argument("--n", default="100,449", help="examples per case (449: the whole digits test split)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time", action="store_true", help="wall-clock ratios instead (a quiet machine)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for model_name in args.models.split(","):
        for eps_text in args.eps.split(","):
            for n in (int(v) for v in args.n.split(",")):
                case = make_case(model_name, eps_text, n, args)
                time_case(case, args.repeats) if args.time else measure(case)


if __name__ == "__main__":
    main()

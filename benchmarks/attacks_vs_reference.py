#!/usr/bin/env python
"""Each attack alone against the reference implementation it claims to match, side by side in one run.

Pairs (same model, images, eps, settings and batch on both sides):

* APGD-CE, APGD-T, FAB-T, Square: robeval's attack class (``robeval.attacks.create``, called as the
  engine calls it: seeded, with each row's example index, so starts are drawn per example) against
  AutoAttack's own class (pyautoattack ``APGDAttack``, ``APGDAttack_targeted``, ``FABAttack_PT``,
  ``SquareAttack``) through its ``perturb``, configured as ``AutoAttack(version="standard")``
  configures it.  Each runs alone, not as a cascade.  Target: robeval at most 1.05x the reference's time.
* PGD: robeval's PGD against ``torchattacks.PGD`` at equal steps, step size and random start.
  Target: at most 1.0x.

Work is shown, not claimed: one counting wrapper (robeval's ``PassCounter``) sits between the model
and *both* sides, so every forward and backward image pass either side makes is counted the same
way (the references' internal passes included: AutoAttack's clean pass in ``perturb``, APGD-T's pass
that picks each target, FAB's and Square's closing checks).  Printed per side: forward and backward
passes per attacked image.

Equal work, decided here: robeval's AutoAttack attacks do more than AutoAttack's ``perturb`` by design
(see robeval/attacks/autoattack.py): they also attack the examples the model already misclassifies
(so top-5 under attack is measured), and they keep the lowest-margin point of each run (two forward
passes per run).  AutoAttack attacks only the correctly classified examples.  So the **target figure**
is measured on the examples the model classifies correctly ("correct" rows): the same examples are
attacked on both sides, and what remains different is in the printed passes.  The "all" rows give
APGD-CE and APGD-T the whole set (what a user gets, robeval doing its extra work) with the ratio of
time per pass (forward + backward images) beside the raw ratio.  FAB-T and Square have nothing to do
on a misclassified example on either side, and PGD attacks every example on both sides, so they get
one row each.

Timing: both sides are warmed up by one call; a timed sample repeats the call until it lasts
``--min-seconds`` (PGD on the demo takes a few tenths of a second); the two sides alternate within
each repeat (A B, then B A), ratios are taken per repeat and the median and quartiles printed
(benchmarks/_timing.py), of wall time and of this process's CPU time (on a shared machine other
jobs stretch the wall clock, much less the CPU time).  ``--profile`` adds one call per side under
cProfile and splits it into the model's passes (forward through the counting wrapper, autograd's
backward) and everything else: robeval's own overhead is its "everything else" minus the
reference's, a fraction that holds on a loaded machine.  Robust top-1 is over all N images (an
example left unattacked because it is misclassified counts as not robust); "differ": examples robust
on one side only (the sides draw their random starts differently: robeval per example, AutoAttack
from its reseeded global generator).

``--large`` adds DeiT-tiny at 224 px with random weights on a few random images (labels = its own
predictions, so every image is "correct"), with shortened settings: per-step overheads differ from
the 8x8 demo models'.

    .venv/bin/python benchmarks/attacks_vs_reference.py [--model digits-deit] [--n 100] [--eps 8/255]
        [--repeats 5] [--threads 1] [--attacks apgd-ce,apgd-t,fab-t,square,pgd] [--large]
"""

from __future__ import annotations

import argparse
import cProfile
import math
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torchattacks
from pyautoattack.autopgd_base import APGDAttack, APGDAttack_targeted
from pyautoattack.fab_pt import FABAttack_PT
from pyautoattack.square import SquareAttack

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import interleaved_samples, paired_ratio  # noqa: E402

import robeval  # noqa: E402
from robeval.attacks import create  # noqa: E402
from robeval.core.eps import parse_one  # noqa: E402
from robeval.data.digits import digits_split  # noqa: E402
from robeval.data.subsets import balanced_subset  # noqa: E402
from robeval.evaluation.attack_guards import PassCounter  # noqa: E402

SEED = 0


def _apgd_ce(model, eps, s, device):
    return APGDAttack(model, n_iter=s["n_iter"], n_restarts=1, eps=eps, seed=SEED, rho=0.75, device=device)


def _apgd_t(model, eps, s, device):
    return APGDAttack_targeted(model, n_iter=s["n_iter"], n_restarts=1, eps=eps, seed=SEED, rho=0.75,
                               n_target_classes=s["n_target_classes"], device=device)


def _fab_t(model, eps, s, device):
    return FABAttack_PT(model, n_restarts=1, n_iter=s["n_iter"], eps=eps, seed=SEED, targeted=True,
                        n_target_classes=s["n_target_classes"], device=device)


def _square(model, eps, s, device):
    return SquareAttack(model, p_init=0.8, n_queries=s["n_queries"], eps=eps, n_restarts=1, seed=SEED,
                        resc_schedule=False, device=device)


def _pgd(model, eps, s, device):
    return torchattacks.PGD(model, eps=eps, alpha=s["rel_stepsize"] * eps, steps=s["steps"], random_start=True)


@dataclass
class Pair:
    """robeval's attack ``name`` and the reference class that it matches, with the example sets compared."""

    name: str
    reference: str
    build: Callable[..., Any]  # (model, eps, settings, device) -> object with perturb(x, y) or __call__
    sets: tuple[str, ...]
    target: float


PAIRS = {
    p.name: p
    for p in (
        Pair("apgd-ce", "AutoAttack APGDAttack", _apgd_ce, ("correct", "all"), 1.05),
        Pair("apgd-t", "AutoAttack APGDAttack_targeted", _apgd_t, ("correct", "all"), 1.05),
        Pair("fab-t", "AutoAttack FABAttack_PT", _fab_t, ("correct",), 1.05),
        Pair("square", "AutoAttack SquareAttack", _square, ("correct",), 1.05),
        Pair("pgd", "torchattacks.PGD", _pgd, ("all",), 1.00),
    )
}
STANDARD = {  # AutoAttack's standard settings, and the protocol's PGD
    "apgd-ce": dict(n_iter=100),
    "apgd-t": dict(n_iter=100, n_target_classes=9),
    "fab-t": dict(n_iter=100, n_target_classes=9),
    "square": dict(n_queries=5000),
    "pgd": dict(steps=20, rel_stepsize=0.25),
}
SHORT = {  # --large: the same code paths, fewer steps
    "apgd-ce": dict(n_iter=10),
    "apgd-t": dict(n_iter=10, n_target_classes=3),
    "fab-t": dict(n_iter=10, n_target_classes=3),
    "square": dict(n_queries=100),
    "pgd": dict(steps=10, rel_stepsize=0.25),
}


@dataclass
class Case:
    """A model and the images both sides attack."""

    label: str
    model: torch.nn.Module
    x: torch.Tensor
    y: torch.Tensor
    examples: list[int]
    settings: dict[str, dict]


def digits_case(name: str, n: int, device: torch.device) -> Case:
    images, labels = digits_split("test")
    idx = balanced_subset(labels.tolist(), n)
    x, y = torch.from_numpy(images[idx]).to(device), torch.from_numpy(labels[idx]).to(device)
    return Case(f"{name}, {n} digits test images", robeval.load_model(name, device=device), x, y, idx, STANDARD)


def large_case(n: int, device: torch.device) -> Case:
    torch.manual_seed(0)
    model = robeval.load_model("deit-tiny", pretrained=False, device=device)
    x = torch.rand(n, 3, 224, 224, device=device)
    with torch.no_grad():
        y = model(x).argmax(1)
    return Case(f"deit-tiny (random weights), {n} random 224 px images, shortened settings", model, x, y,
                list(range(n)), SHORT)


@dataclass
class Side:
    wall: list[float] = field(default_factory=list)  # seconds per call, one entry per timed sample
    cpu: list[float] = field(default_factory=list)  # this process's CPU seconds per call, ditto
    forward: float = 0.0  # passes per attacked image
    backward: float = 0.0
    robust: set[int] = field(default_factory=set)


def contender(pair: Pair, ours: bool, case: Case, rows: torch.Tensor, eps: float, counter: PassCounter, out: Side):
    """A call of one side on ``case``'s ``rows`` that leaves its passes and robust examples in ``out``."""
    x, y = case.x[rows], case.y[rows]
    examples = [case.examples[int(r)] for r in rows]
    settings = case.settings[pair.name]
    attack = create(pair.name, counter, eps=eps, seed=SEED, **settings) if ours else pair.build(counter, eps, settings, x.device)

    def call() -> None:
        counter.reset()
        torch.manual_seed(SEED)
        if ours:
            x_adv = attack(x, y, seed=SEED, examples=examples)
        elif hasattr(attack, "perturb"):
            x_adv = attack.perturb(x.clone(), y.clone())
        else:
            x_adv = attack(x, y)
        if x.device.type == "cuda":
            torch.cuda.synchronize(x.device)
        out.forward, out.backward = counter.forward_images / len(y), counter.backward_images / len(y)
        with torch.no_grad():
            robust = (case.model(x_adv).argmax(1) == y).tolist()
        out.robust = {e for e, ok in zip(examples, robust) if ok}

    return call


def calls_per_sample(calls: dict[str, Callable[[], None]], min_seconds: float) -> int:
    """Warm both sides up (one call each) and return how many calls make a timed sample last
    ``min_seconds`` (a call of a few tenths of a second is at the mercy of the machine's noise)."""
    shortest = float("inf")
    for call in calls.values():
        tick = time.perf_counter()
        call()
        shortest = min(shortest, time.perf_counter() - tick)
    return max(1, math.ceil(min_seconds / max(shortest, 1e-6)))


def sample(call: Callable[[], None], inner: int, side: Side) -> Callable[[], None]:
    """One timed sample: ``inner`` calls; its CPU seconds per call land in ``side.cpu`` (the wall clock
    is read by interleaved_samples)."""

    def run() -> None:
        tick = time.process_time()
        for _ in range(inner):
            call()
        side.cpu.append((time.process_time() - tick) / inner)

    return run


def pass_seconds(call: Callable[[], None]) -> tuple[float, float]:
    """One profiled call: its seconds, and the seconds inside the model's passes (the counting wrapper's
    forward and autograd's backward); the rest is the attack's own work (library code and robeval's)."""
    profiler = cProfile.Profile()
    profiler.runcall(call)
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    total = sum(entry[2] for entry in stats.values())  # every function's own time
    inside = sum(entry[3] for (path, _, name), entry in stats.items()
                 if (name == "forward" and path.endswith("attack_guards.py")) or "'run_backward'" in name)
    return total, inside


def compare(pair: Pair, case: Case, which: str, eps: float, repeats: int, min_seconds: float,
            profile: bool = False) -> dict[str, Any]:
    """One pair on one example set: both sides' samples (seconds per call), passes and robust examples."""
    with torch.no_grad():
        correct = (case.model(case.x).argmax(1) == case.y).nonzero().squeeze(1)
    rows = correct if which == "correct" else torch.arange(len(case.y), device=case.y.device)
    counter = PassCounter(case.model)
    sides = {"robeval": Side(), "reference": Side()}
    calls = {name: contender(pair, name == "robeval", case, rows, eps, counter, side) for name, side in sides.items()}
    inner = calls_per_sample(calls, min_seconds)
    wall = interleaved_samples({n: sample(c, inner, sides[n]) for n, c in calls.items()}, repeats=repeats, warmup=0)
    for name, side in sides.items():
        side.wall = [t / inner for t in wall[name]]
    ratios = {clock: paired_ratio({n: getattr(s, clock) for n, s in sides.items()}, "robeval", "reference")
              for clock in ("wall", "cpu")}
    profiled = {n: pass_seconds(c) for n, c in calls.items()} if profile else None
    return dict(pair=pair, which=which, attacked=len(rows), sides=sides, ratios=ratios, inner=inner, profiled=profiled)


def report(result: dict[str, Any], n: int) -> list[str]:
    """Three printed lines: times and paired ratios (wall and CPU), passes of each side, robust top-1."""
    ours, ref = result["sides"]["robeval"], result["sides"]["reference"]
    pair, ratios = result["pair"], result["ratios"]
    target = pair.target
    verdict = {c: "met" if r[0] <= target else "NOT met" for c, r in ratios.items()}
    passes_ratio = (ours.forward + ours.backward) / max(ref.forward + ref.backward, 1e-12)
    is_target = result["which"] == "correct" or len(pair.sets) == 1
    ratio_text = {c: f"{r[0]:.3f}x ({r[1]:.3f}-{r[2]:.3f})" for c, r in ratios.items()}
    return [
        f"  {pair.name} vs {pair.reference}, {result['which']} examples ({result['attacked']})"
        + (f", target <= {target:.2f}x: wall {verdict['wall']}, cpu {verdict['cpu']}" if is_target else ", not the target figure"),
        f"    time    robeval {statistics.median(ours.wall):.3f} s, reference {statistics.median(ref.wall):.3f} s per call "
        f"({result['inner']} call(s) per sample); robeval / reference: wall {ratio_text['wall']}, cpu {ratio_text['cpu']}",
        f"    passes  forward/img robeval {ours.forward:.2f}, reference {ref.forward:.2f}; backward/img robeval "
        f"{ours.backward:.2f}, reference {ref.backward:.2f}; wall ratio per pass {ratios['wall'][0] / passes_ratio:.3f}x",
        f"    robust  top-1 robeval {100 * len(ours.robust) / n:.2f}%, reference {100 * len(ref.robust) / n:.2f}% of {n}; "
        f"examples robust on one side only: {len(ours.robust ^ ref.robust)}",
    ] + profile_lines(result["profiled"])


def profile_lines(profiled: dict[str, tuple[float, float]] | None) -> list[str]:
    """``--profile``: each side's seconds in the model's passes and outside them (one call under cProfile,
    which slows Python code: fractions, not times), and robeval's extra outside the passes."""
    if profiled is None:
        return []
    (ours, ours_in), (ref, ref_in) = profiled["robeval"], profiled["reference"]
    return [
        f"    profile robeval {ours:.3f} s = {ours_in:.3f} in model passes + {ours - ours_in:.3f} other; reference "
        f"{ref:.3f} s = {ref_in:.3f} + {ref - ref_in:.3f}; robeval's other minus the reference's: "
        f"{100 * ((ours - ours_in) - (ref - ref_in)) / ref:+.1f}% of the reference's time"
    ]


def run_case(case: Case, attacks: list[str], eps_text: str, args) -> None:
    eps = parse_one(eps_text).value
    with torch.no_grad():
        clean = int((case.model(case.x).argmax(1) == case.y).sum())
    print(f"{case.label} ({clean} classified correctly), eps {eps_text}, {args.threads} thread(s), {args.device}, "
          f"{args.repeats} interleaved repeats (ratios: median and quartiles of the paired repeats)")
    print(f"  settings: {'; '.join(f'{a} {case.settings[a]}' for a in attacks)}")
    for name in attacks:
        pair = PAIRS[name]
        for which in pair.sets:
            if which == "all" and "correct" in pair.sets and clean == len(case.y):
                continue  # the same examples as the "correct" row
            result = compare(pair, case, which, eps, args.repeats, args.min_seconds, args.profile)
            for line in report(result, len(case.y)):
                print(line, flush=True)
    print("  per pass = wall ratio / (robeval passes / reference passes), passes = forward + backward images")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", help="demo model(s); default digits-deit and digits-deit-elliptical")
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--eps", default="8/255")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--min-seconds", type=float, default=2.0, help="a timed sample repeats a call to last this long")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--attacks", default=",".join(PAIRS))
    parser.add_argument("--large", action="store_true", help="also DeiT-tiny at 224 px, random weights")
    parser.add_argument("--large-n", type=int, default=4)
    parser.add_argument("--large-eps", default="1/255", help="eps of the --large case (random weights fall easily)")
    parser.add_argument("--no-digits", action="store_true", help="only the --large case")
    parser.add_argument("--profile", action="store_true", help="also one call per side under cProfile: time in "
                        "the model's passes and outside them")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    attacks = [a for a in args.attacks.split(",") if a]
    digits = [] if args.no_digits else args.model or ["digits-deit", "digits-deit-elliptical"]
    for name in digits:
        run_case(digits_case(name, args.n, device), attacks, args.eps, args)
    if args.large:
        run_case(large_case(args.large_n, device), attacks, args.large_eps, args)


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""The fast protocol's pieces against AutoAttack's own run_standard_evaluation, in model passes.

On each (model, eps, n): AutoAttack's ``run_standard_evaluation`` (version standard, seed 0, all n in
one batch, images in [0,1] with the normalisation inside the model), then the fast sequence on the same
images: the clean pass, APGD-CE on the correctly classified examples, ``apgd-t-malt`` with k targets on
the examples APGD-CE left robust, and the audit: a seeded Bernoulli(rate) sample of the survivors
(robeval.evaluation.fast_audit) attacked by what AutoAttack would still run on them (``apgd-t-rest``,
AutoAttack's APGD-T targets the pass skipped, then FAB-T and Square exactly as AutoAttack runs them,
each on the points still robust).  When the audit breaks a point the run escalates
(robeval.evaluation.fast_audit.escalated_stages): a FAB-T or Square break runs all three on every other
survivor (the result is AutoAttack's); an apgd-t-rest break alone runs apgd-t-rest on every survivor and
the sample stands for FAB-T and Square.  Both sides go through ONE counting wrapper
(robeval's PassCounter: images sent forward, images whose gradient flowed back), AutoAttack's own
checks and each side's verdict passes included.

Prints per case AutoAttack's passes and robust accuracy, then per (k, rate): the fast side's passes
(pass + audit [+ escalation]), the ratio to AutoAttack's in forward+backward image-passes and in
forward + 2 x backward (a backward costs about two forwards: the ratio closer to wall time), the
robust accuracy it reports, the per-example table (fooled by both / by AutoAttack only / by fast only /
robust in both), the audit (m sampled, what each stage broke), the escalation, U and the bound
fast - (S/n) x U (S and m after any escalated stage), and whether the bound is at most AutoAttack's
robust accuracy.  ``--audit-all`` adds, per k, what the audit's attacks
break when run on every survivor (stage by stage: the escalation's work) and what apgd-t on the first k
targets in logit order leaves (what MALT's order gains).  ``--time`` instead times AutoAttack against the fast
sequence at the first k and rate (repeats interleaved, median and quartiles of the paired ratio): for
a quiet machine.

    .venv/bin/python benchmarks/fast_vs_autoattack.py [--models digits-deit,digits-deit-elliptical]
        [--eps 8/255,16/255] [--n 100,449] [--k 3] [--rates 0.05] [--seed 0] [--library-draws] [--audit-all]
        [--aa-cache aa.json]
    .venv/bin/python benchmarks/fast_vs_autoattack.py --time [--repeats 5] [--n 449] ...
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import torch
from pyautoattack import AutoAttack

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import interleaved_samples, paired_ratio  # noqa: E402

import robeval  # noqa: E402
from robeval.attacks import create  # noqa: E402
from robeval.data.digits import digits_split, load_digits_data  # noqa: E402
from robeval.eps import parse_one  # noqa: E402
from robeval.evaluation.attack_guards import PassCounter  # noqa: E402
from robeval.evaluation.fast_audit import (  # noqa: E402
    AUDIT_RATE,
    AUDIT_STAGES,
    FAST_TARGETS,
    audit_sample,
    escalated_stages,
)
from robeval.results.audit_bound import AuditBound  # noqa: E402

@dataclass(frozen=True)
class Passes:
    forward: int = 0
    backward: int = 0

    def __add__(self, other: "Passes") -> "Passes":
        return Passes(self.forward + other.forward, self.backward + other.backward)

    @property
    def total(self) -> int:
        return self.forward + self.backward

    @property
    def weighted(self) -> int:
        return self.forward + 2 * self.backward


@dataclass
class Case:
    model_name: str
    eps_text: str
    eps: float
    examples: list[int]
    x: torch.Tensor
    y: torch.Tensor
    model: torch.nn.Module
    counter: PassCounter
    seed: int
    library_draws: bool

    def take(self) -> Passes:
        """The passes counted since the last take."""
        out = Passes(self.counter.forward_images, self.counter.backward_images)
        self.counter.reset()
        return out


def make_case(model_name: str, eps_text: str, n: int, args) -> Case:
    examples = load_digits_data(n).indices
    images, labels = digits_split("test")
    x = torch.from_numpy(images[examples]).to(args.device)
    y = torch.from_numpy(labels[examples]).to(args.device)
    model = robeval.load_model(model_name, device=torch.device(args.device))
    return Case(model_name, eps_text, parse_one(eps_text).value, examples, x, y, model, PassCounter(model),
                args.seed, args.library_draws)


def run_autoattack(case: Case) -> tuple[set[int], Passes]:
    """AutoAttack's robust rows (positions) and its passes."""
    case.take()
    adversary = AutoAttack(case.counter, eps=case.eps, norm="Linf", seed=case.seed, version="standard",
                           device=case.x.device)
    adversary.verbose = False
    x_adv, _ = adversary.run_standard_evaluation(case.x, case.y, batch_size=len(case.y))
    passes = case.take()
    with torch.no_grad():
        robust = (case.model(x_adv).argmax(1) == case.y).tolist()
    return {r for r, ok in enumerate(robust) if ok}, passes


def attack_rows(case: Case, name: str, rows: list[int], library: bool, **settings) -> set[int]:
    """Rows (positions) that robeval's attack ``name`` fools, called as the engine calls it (with the rows'
    example indices, or as AutoAttack draws with ``library``), with the verdict's forward pass counted."""
    if not rows:
        return set()
    idx = torch.tensor(rows, device=case.y.device)
    attack = create(name, case.counter, case.eps, seed=case.seed, **settings)
    examples = None if library or case.library_draws else [case.examples[r] for r in rows]
    x_adv = attack(case.x[idx], case.y[idx], seed=case.seed, examples=examples)
    with torch.no_grad():
        fooled = (case.counter(x_adv).argmax(1) != case.y[idx]).tolist()
    return {r for r, f in zip(rows, fooled) if f}


def fast_start(case: Case) -> tuple[list[int], Passes]:
    """The clean pass and APGD-CE on the correctly classified rows: the rows left robust, the passes."""
    case.take()
    with torch.no_grad():
        correct = (case.counter(case.x).argmax(1) == case.y).tolist()
    rows = [r for r, ok in enumerate(correct) if ok]
    fooled = attack_rows(case, "apgd-ce", rows, library=False)
    return [r for r in rows if r not in fooled], case.take()


def malt_pass(case: Case, rows: list[int], k: int) -> tuple[list[int], Passes]:
    """``apgd-t-malt`` with ``k`` targets on ``rows``: the survivors and the passes."""
    fooled = attack_rows(case, "apgd-t-malt", rows, library=False, n_target_classes=k)
    return [r for r in rows if r not in fooled], case.take()


def broken_by_stage(case: Case, rows: list[int], k: int, stages=AUDIT_STAGES) -> dict[str, set[int]]:
    """The rows that each of AutoAttack's attacks beyond the fast pass breaks (``stages``, in AutoAttack's
    order: its APGD-T targets the pass skipped, then FAB-T and Square as AutoAttack runs them), each on
    the rows still robust."""
    alive, broken = list(rows), {}
    for name in stages:
        settings = {"skip_malt_targets": k} if name == "apgd-t-rest" else {}
        broken[name] = attack_rows(case, name, alive, library=name != "apgd-t-rest", **settings)
        alive = [r for r in alive if r not in broken[name]]
    return broken


@dataclass
class Audit:
    survivors: list[int]  # after the fast pass
    sample: list[int]
    broken: dict[str, set[int]]  # audited rows each stage broke
    escalated: dict[str, set[int]]  # unaudited survivors each escalated stage broke
    passes: Passes
    escalation: Passes

    def robust(self) -> set[int]:
        return set(self.survivors).difference(*self.broken.values(), *self.escalated.values())

    def bound(self, n: int) -> AuditBound | None:
        """The bound (d = 0 for the stages not escalated); None when everything escalated (AutoAttack's)."""
        if len(self.escalated) == len(AUDIT_STAGES):
            return None
        audited = set(self.sample).difference(*self.broken.values())
        return AuditBound(n, len(self.robust()), len(audited), 0)


def run_audit(case: Case, survivors: list[int], k: int, rate: float) -> Audit:
    chosen = set(audit_sample(case.seed, [case.examples[r] for r in survivors], rate))
    sample = [r for r in survivors if case.examples[r] in chosen]
    broken = broken_by_stage(case, sample, k)
    passes = case.take()
    others = [r for r in survivors if case.examples[r] not in chosen]
    escalated = broken_by_stage(case, others, k, escalated_stages(s for s, rows in broken.items() if rows))
    return Audit(survivors, sample, broken, escalated, passes, case.take())


def fast_sequence(case: Case, k: int, rate: float) -> None:
    """The whole fast sequence once (what --time times)."""
    rows, _ = fast_start(case)
    survivors, _ = malt_pass(case, rows, k)
    run_audit(case, survivors, k, rate)


def table(n: int, aa_robust: set[int], fast_robust: set[int]) -> str:
    both = n - len(aa_robust | fast_robust)
    aa_only, fast_only = len(fast_robust - aa_robust), len(aa_robust - fast_robust)
    return (f"fooled by both {both:3d}, AutoAttack only {aa_only:2d}, fast only {fast_only:2d}, "
            f"robust in both {len(aa_robust & fast_robust):3d}")


def report_line(case: Case, k: int, rate: float, aa: tuple[set[int], Passes], spent: Passes, audit: Audit) -> str:
    n, (aa_robust, aa_passes) = len(case.y), aa
    total = spent + audit.passes + audit.escalation
    robust, bound = audit.robust(), audit.bound(n)
    broke = ", ".join(f"{name} {len(rows)}" for name, rows in audit.broken.items() if rows) or "nothing"
    escalation = f" + escalation {audit.escalation.total} ({', '.join(audit.escalated)})" if audit.escalated else ""
    if bound is None:
        claim = "escalated to AutoAttack: no bound needed"
    else:
        ok = "yes" if bound.bound <= len(aa_robust) / n else "NO"
        claim = f"U={bound.upper_break_rate:.3f} bound {100 * bound.bound:5.1f}% <= AutoAttack's: {ok}"
    return (f"  k={k} rate={rate:<5g} passes {spent.total:8d} + audit {audit.passes.total:7d}{escalation}"
            f" = {total.total / aa_passes.total:.3f}x (fwd+2bwd {total.weighted / aa_passes.weighted:.3f}x)"
            f"  robust {100 * len(robust) / n:5.1f}% ({100 * len(audit.survivors) / n:5.1f}% after the pass)\n"
            f"      {table(n, aa_robust, robust)}; audit m={len(audit.sample)} broke {broke}; {claim}")


def escalate_all(case: Case, k: int, aa_robust: set[int], survivors: list[int]) -> None:
    """What the audit's attacks break when run on every survivor (an escalation's work), stage by stage."""
    broken = broken_by_stage(case, survivors, k)
    passes = case.take()
    robust = set(survivors).difference(*broken.values())
    stages = ", ".join(f"{name} {len(rows)}" for name, rows in broken.items())
    print(f"    on all {len(survivors)} survivors (passes {passes.total}) the audit's attacks break: {stages}; "
          f"then {table(len(case.y), aa_robust, robust)}")


def autoattack_once(case: Case, cache: Path | None) -> tuple[set[int], Passes]:
    """AutoAttack's result, read from ``cache`` (a JSON file) when it holds this case: on CPU, with its
    seed, AutoAttack's run is deterministic, and it is the costly side of a sweep."""
    key = f"{case.model_name}|{case.eps_text}|{len(case.y)}|{case.seed}|{case.x.device}"
    stored = json.loads(cache.read_text()) if cache is not None and cache.exists() else {}
    if key in stored:
        entry = stored[key]
        return set(entry["robust"]), Passes(entry["forward"], entry["backward"])
    robust, passes = run_autoattack(case)
    if cache is not None:
        stored[key] = {"robust": sorted(robust), "forward": passes.forward, "backward": passes.backward}
        cache.write_text(json.dumps(stored, indent=1))
    return robust, passes


def measure(case: Case, ks: list[int], rates: list[float], everything: bool, cache: Path | None) -> None:
    aa = autoattack_once(case, cache)
    n = len(case.y)
    print(f"{case.model_name} eps {case.eps_text} n {n}: AutoAttack robust {100 * len(aa[0]) / n:5.1f}%, "
          f"passes {aa[1].total} (forward {aa[1].forward}, backward {aa[1].backward})", flush=True)
    rows, start = fast_start(case)
    print(f"  APGD-CE leaves {len(rows)} robust: passes {start.total} (clean pass included)")
    for k in ks:
        survivors, malt = malt_pass(case, rows, k)
        print(f"  apgd-t-malt k={k} leaves {len(survivors)} robust: passes {malt.total}")
        if everything:
            escalate_all(case, k, aa[0], survivors)
            fooled = attack_rows(case, "apgd-t", rows, False, n_target_classes=k)
            by_logit = [r for r in rows if r not in fooled]
            print(f"    apgd-t on its first k={k} targets in logit order instead (passes {case.take().total}) "
                  f"leaves {len(by_logit)} robust, AutoAttack only {len(set(by_logit) - aa[0])}")
        for rate in rates:
            audit = run_audit(case, survivors, k, rate)
            print(report_line(case, k, rate, aa, start + malt, audit), flush=True)


def time_case(case: Case, k: int, rate: float, repeats: int) -> None:
    samples = interleaved_samples({"autoattack": lambda: run_autoattack(case),
                                   "fast": lambda: fast_sequence(case, k, rate)}, repeats=repeats, warmup=0)
    ratio, q1, q3 = paired_ratio(samples, "fast", "autoattack")
    medians = {name: sorted(ts)[len(ts) // 2] for name, ts in samples.items()}
    print(f"{case.model_name} eps {case.eps_text} n {len(case.y)} k={k} rate={rate:g}: AutoAttack "
          f"{medians['autoattack']:.2f} s, fast {medians['fast']:.2f} s, fast / AutoAttack {ratio:.3f}x "
          f"(quartiles {q1:.3f}-{q3:.3f}, {repeats} interleaved repeats)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="digits-deit,digits-deit-elliptical")
    parser.add_argument("--eps", default="8/255,16/255")
    parser.add_argument("--n", default="100,449", help="examples per case (449: the whole digits test split)")
    parser.add_argument("--k", default=str(FAST_TARGETS), help="apgd-t-malt's targets (a comma list sweeps)")
    parser.add_argument("--rates", default=str(AUDIT_RATE), help="audit sampling rates (a comma list sweeps)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--library-draws", action="store_true",
                        help="APGD's starts as AutoAttack draws them (seeded global RNG), not per example")
    parser.add_argument("--audit-all", action="store_true",
                        help="also run the audit's attacks on every survivor (what each breaks: an escalation) "
                             "and apgd-t on the first k targets in logit order (what MALT's order gains)")
    parser.add_argument("--aa-cache", type=Path, help="a JSON file keeping AutoAttack's results between sweeps")
    parser.add_argument("--time", action="store_true", help="wall-clock ratio instead (a quiet machine)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    ks, rates = [int(k) for k in args.k.split(",")], [float(r) for r in args.rates.split(",")]
    for model_name in args.models.split(","):
        for eps_text in args.eps.split(","):
            for n in (int(v) for v in args.n.split(",")):
                case = make_case(model_name, eps_text, n, args)
                if args.time:
                    time_case(case, ks[0], rates[0], args.repeats)
                else:
                    measure(case, ks, rates, args.audit_all, args.aa_cache)


if __name__ == "__main__":
    main()

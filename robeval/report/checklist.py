"""``robeval check RUN --report FILE``: the evaluation checklist of a stored run as a document.

For each model every indicator gets a status (ok / RAISED / not run / n/a) and its evidence from the
run, then a verdict line.  The indicators follow Carlini et al. 2019, "On Evaluating Adversarial
Robustness" (their checklist) and Pintor et al. 2022, "Indicators of
Attack Failure" (their six indicators); each names the items it covers.  Indicators are a registry:
one function per indicator, reading the run's summary and its model checks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from ..attacks import get_attack_spec
from ..defaults import NOT_ATTACKS
from ..evaluation.config import ADAPTIVE_SUFFIX
from ..evaluation.protocols import restarted_attacks
from ..models.user_code import registered_spec
from ..results.convergence import convergence_rows, why_no_curves
from ..results.flags import (
    MASKING_GAP,
    adaptive_gaps,
    chance_flags,
    chance_rows,
    flags_from_model_checks,
    kind_vs_white,
    minimum_norm_comparison,
    near_chance,
    noise_points,
    precision_flags,
    rising_with_eps,
)
from .captions import incomplete_parts
from .minimum_norm import curve

LARGE_EPS = 64 / 255  # at this budget a working attack leaves (almost) no image correctly classified
NEAR_ZERO = 1.0  # % top-1


@dataclass
class Finding:
    status: str  # "ok", "RAISED", "not run", "n/a"
    evidence: str


@dataclass
class Evidence:
    """What the indicators read: the run's summary, its model checks, per example the minimal norms
    its minimum-norm attacks found (columns model, attack, min_norm; may be empty), and a companion run."""

    summary: pd.DataFrame
    checks: dict
    norms: pd.DataFrame
    companion: pd.DataFrame  # the summary of a run of the other restart protocol on the same examples (may be empty)


Judge = Callable[[str, pd.DataFrame, Evidence], Finding]


@dataclass(frozen=True)
class Indicator:
    name: str
    covers: str
    judge: Judge


INDICATORS: list[Indicator] = []


def indicator(name: str, covers: str):
    def decorate(fn: Judge) -> Judge:
        INDICATORS.append(Indicator(name, covers, fn))
        return fn

    return decorate


def _model_flag(check: str, model: str, checks: dict) -> Finding:
    if model not in checks:
        return Finding("not run", "the model checks ran in another process of this run or were not stored")
    flags = [f for f in flags_from_model_checks(model, checks[model]) if f.check == check]
    return (
        Finding("RAISED", f"{flags[0].message} — {flags[0].advice}")
        if flags
        else Finding("ok", _evidence(check, checks[model]))
    )


def _evidence(check: str, values: dict) -> str:
    return {
        "randomness": f"relative logit change between two passes {values['relative_logit_change_between_passes']:.2g}",
        "softmax-output": "outputs are logits (neither probabilities nor log-probabilities)",
        "zero-gradients": f"{100 * values['share_zero_or_nan_gradients']:.1f}% of checked examples have zero or NaN "
        "input gradients",
    }[check]


@indicator(
    "Clean accuracy is above chance",
    "Carlini et al. checklist (sanity-check the evaluation: report clean accuracy; a model at chance on clean "
    "images, e.g. one fed unnormalised input, measures nothing under attack)",
)
def above_chance(model, rows, ev):
    return _chance_finding(chance_rows(rows))


def _chance_finding(found: pd.DataFrame) -> Finding:
    """The first clean row on the model's own data against chance (none: not applicable)."""
    if found.empty:
        return Finding("n/a", "no clean row on the model's own data (a shift data set, or no class count stored)")
    raised = chance_flags(found.head(1))
    if raised:
        return Finding("RAISED", f"{raised[0].message} — {raised[0].advice}")
    r = found.iloc[0]
    _, p = near_chance(float(r["top1"]), int(r["n"]), int(r["classes"]))
    return Finding(
        "ok",
        f"clean top-1 {r['top1']:.2f}% on {int(r['n'])} examples, chance {100 / r['classes']:.2f}% "
        f"({int(r['classes'])} classes; exact test of it being above chance: p = {p:.2g})",
    )


@indicator(
    "Randomness at inference",
    "Carlini et al. checklist (randomised defences need EOT); Pintor et al.: Unstable Predictions",
)
def randomness(model, rows, ev):
    return _model_flag("randomness", model, ev.checks)


@indicator("Outputs are logits", "Carlini et al. checklist (losses on logits, not softmax outputs)")
def softmax(model, rows, ev):
    return _model_flag("softmax-output", model, ev.checks)


@indicator("Input gradients exist", "Pintor et al.: Unavailable Gradients; Carlini et al. checklist (gradient masking)")
def gradients(model, rows, ev):
    return _model_flag("zero-gradients", model, ev.checks)


def _kind_vs_white(rows: pd.DataFrame, kind: str) -> Finding:
    lines, raised = [], False
    for eps in dict.fromkeys(rows["eps"]):
        for attack, value, best in kind_vs_white(rows[rows["eps"] == eps], kind):
            raised |= value < best - MASKING_GAP
            lines.append(f"eps {eps}: {attack} {value:.2f} vs best white-box {best:.2f}")
    if not lines:
        return Finding("not run", f"no {kind} attack next to a white-box one in this run")
    return Finding("RAISED" if raised else "ok", "; ".join(lines))


@indicator("Black-box attacks do not beat white-box ones", "Carlini et al. checklist (try gradient-free attacks)")
def black_box(model, rows, ev):
    return _kind_vs_white(rows, "black-box")


@indicator(
    "Transfer attacks do not beat white-box ones",
    "Carlini et al. checklist (try transfer attacks); Pintor et al.: Transfer Failure",
)
def transfer(model, rows, ev):
    found = _kind_vs_white(rows, "transfer")
    if found.status == "not run":
        found.evidence += " (robeval run ... --attacks pgd,transfer-pgd --source-model deit-tiny)"
    return found


@indicator(
    "Iterative attacks beat one step", "Carlini et al. checklist (iterative attacks should outperform single-step ones)"
)
def iterative(model, rows, ev):
    lines, raised = [], False
    for eps in dict.fromkeys(rows["eps"]):
        sel = rows[rows["eps"] == eps].set_index("attack")["top1"]
        if "fgsm" in sel and "pgd" in sel:
            raised |= sel["pgd"] > sel["fgsm"] + MASKING_GAP
            lines.append(f"eps {eps}: PGD {sel['pgd']:.2f}, FGSM {sel['fgsm']:.2f}")
    return (
        Finding("RAISED" if raised else "ok", "; ".join(lines)) if lines else Finding("not run", "no FGSM and PGD pair")
    )


@indicator(
    "Accuracy falls as eps grows",
    "Carlini et al. checklist (a larger budget never helps the model); Pintor et al.: Non-converging Attack",
)
def monotone(model, rows, ev):
    if rows["eps"].nunique() < 2:
        return Finding("not run", "one eps only (robeval run ... --eps 1/255,2/255,4/255,8/255)")
    rising = list(dict.fromkeys(attack for attack, *_ in rising_with_eps(rows)))
    return (
        Finding("RAISED", f"top-1 rises with eps under {', '.join(rising)}")
        if rising
        else Finding("ok", f"non-increasing over {rows['eps'].nunique()} eps values for every attack")
    )


@indicator("Accuracy reaches 0 at a large eps", "Carlini et al. checklist (an unbounded attack must succeed always)")
def reaches_zero(model, rows, ev):
    white = rows[rows["attack"].map(lambda a: a not in NOT_ATTACKS and _kind(a) == "white-box")]
    large = white[white["eps_value"] >= LARGE_EPS - 1e-9]
    lines = [f"lowest fixed-eps white-box top-1 at eps >= 64/255: {large['top1'].min():.2f}%"] if len(large) else []
    best = large["top1"].min() if len(large) else None
    for attack, found in ev.norms[ev.norms["model"] == model].groupby("attack", sort=False):
        at_large = float(curve(found["min_norm"], [LARGE_EPS])[0])
        lines.append(f"{attack} curve at 64/255: {at_large:.2f}%")
        best = at_large if best is None else min(best, at_large)
    if best is None:
        return Finding(
            "not run",
            "no white-box attack at eps >= 64/255 and no minimum-norm curve in this run "
            "(robeval check --report FILE --run-missing makes a PGD run at 16/255 and 64/255; "
            "or robeval run ... --attacks fmn)",
        )
    return Finding("ok" if best <= NEAR_ZERO else "RAISED", "; ".join(lines))


@indicator(
    "Minimum-norm curve meets the fixed-eps attacks",
    "Pintor et al.: Non-converging Attack and Incomplete "
    "Optimization; Carlini et al. checklist (minimum-distortion attacks, accuracy against distortion)",
)
def minimum_norm(model, rows, ev):
    lines, raised = [], False
    for eps in dict.fromkeys(rows["eps"]):
        for search, value, fixed, best, noise in minimum_norm_comparison(rows[rows["eps"] == eps]):
            raised |= abs(value - best) > noise
            lines.append(f"eps {eps}: {search} {value:.2f} vs {fixed} {best:.2f} (noise {noise:.2f})")
    if not lines:
        return Finding(
            "not run",
            "no minimum-norm attack beside a fixed-eps white-box one (robeval run ... --attacks pgd,apgd-ce,fmn)",
        )
    return Finding("RAISED" if raised else "ok", "; ".join(lines))


@indicator(
    "Restarts do not change the result",
    "Pintor et al.: Incomplete Optimization; Carlini et al. checklist (random restarts)",
)
def restarts(model, rows, ev):
    """Compares this run with a finished run of the other restart protocol (standard: one restart;
    aa-plus: five) on the same models, data, examples and eps, found in the same store."""
    other = ev.companion[ev.companion["model"] == model] if len(ev.companion) else ev.companion
    lines, raised = [], False
    for r in other.itertuples():
        mine = rows[(rows["eps"] == r.eps) & (rows["attack"] == r.attack)]
        if r.attack not in restarted_attacks() or mine.empty:
            continue
        this_run, that_run = float(mine["top1"].iloc[0]), float(r.top1)
        one, five = (this_run, that_run) if mine["protocol"].iloc[0] == "standard" else (that_run, this_run)
        noise = noise_points(one, int(r.n))
        raised |= five < one - noise
        lines.append(f"eps {r.eps}: {r.attack} {one:.2f} with 1 restart, {five:.2f} with 5 (noise {noise:.2f})")
    if lines:
        return Finding("RAISED" if raised else "ok", "; ".join(lines) + f" (run {other['run_id'].iloc[0]})")
    plus = "protocol" in rows and (rows["protocol"] == "aa-plus").any()
    return Finding(
        "not run",
        (
            "the reported numbers include 5 restarts; a run with --protocol standard of the same "
            "models and examples in this store shows whether they changed the result"
        )
        if plus
        else "one restart per attack; a run with --protocol aa-plus of the same models and examples in this "
        "store shows whether more restarts change the result",
    )


@indicator(
    "Adaptive attack (gradients through the data-dependent weight)", "Carlini et al. checklist (adaptive attacks)"
)
def adaptive(model, rows, ev):
    spec = registered_spec(model)  # None: a renamed model of a combined table, or the user's code (not imported)
    takes_adaptive = spec.is_adaptive if spec is not None else True
    if not takes_adaptive:
        return Finding("n/a", "no data-dependent attention weight to differentiate through")
    gaps = adaptive_gaps(ev.summary)
    mine = gaps[gaps["model"] == model] if not gaps.empty else gaps
    if mine.empty:
        return Finding("not run", "no +adaptive evaluation of this model (--adaptive, for models that take it)")
    worst = mine["gap"].max()
    return Finding(
        "RAISED" if worst > MASKING_GAP else "ok", f"largest top-1 drop with gradients through it: {worst:+.2f}"
    )


@indicator(
    "Reduced precision does not weaken the attacks",
    "Carlini et al. checklist (verify the attack is as strong as it can be): attacks crafted in bf16/fp16 "
    "checked again in fp32",
)
def precision(model, rows, ev):
    crafted = [p for p in dict.fromkeys(rows.get("precision", pd.Series(["fp32"]))) if p != "fp32"]
    checked = rows[rows["fp32_checked"] > 0] if "fp32_checked" in rows else rows.iloc[0:0]
    if not crafted:
        return Finding("n/a", "attacks crafted in strict fp32")
    if checked.empty:
        return Finding("not run", f"crafted in {crafted[0]}, with no white-box attack re-checked in fp32")
    raised = {f.message for f in precision_flags(checked)}
    lines = [
        f"eps {r.eps}: {r.attack} {r.fp32_fooled} of {r.fp32_checked} fooled only in fp32, {r.fp32_rescued} only "
        f"in {r.precision}"
        for r in checked.itertuples()
    ]
    return Finding("RAISED" if raised else "ok", "; ".join(sorted(raised) or lines))


@indicator(
    "The attacks converged",
    "Pintor et al.: Non-converging Attack; Carlini et al. checklist (run attacks to convergence: accuracy "
    "against iterations levels off)",
)
def converged(model, rows, ev):
    """Each curve's fall over the last tenth of its budget against the noise test (results.convergence)."""
    found = convergence_rows(rows)
    if not found:
        return Finding("not run", why_no_curves(rows))
    lines = [
        f"eps {r['eps']}: {r['attack']} {r['start']:.2f} -> {r['end']:.2f} over the last tenth (standard error "
        f"{r['noise']:.2f})" + (f", still falling: {r['advice']}" if r["falling"] else "")
        for r in found
    ]
    return Finding("RAISED" if any(r["falling"] for r in found) else "ok", "; ".join(lines))


def _kind(attack: str) -> str | None:
    try:
        return get_attack_spec(attack).kind
    except Exception:  # a shifted condition, or an attack no longer registered
        return None


@dataclass
class ModelChecklist:
    """One model's findings, indicator by indicator, and its verdict line."""

    model: str
    findings: list[tuple[Indicator, Finding]]

    @property
    def verdict(self) -> str:
        raised = [ind.name for ind, f in self.findings if f.status == "RAISED"]
        missing = sum(f.status == "not run" for _, f in self.findings)
        text = (
            f"RAISED: {'; '.join(raised)}"
            if raised
            else f"no indicator of a failed attack among the {len(self.findings) - missing} checked"
        )
        return text + (f" ({missing} not run)" if missing else "")


def checklist_findings(
    summary: pd.DataFrame,
    checks: dict,
    norms: pd.DataFrame | None = None,
    companion: pd.DataFrame | None = None,
) -> list[ModelChecklist]:
    """Every indicator's finding for every model of the run (adaptive evaluations inside their model's)."""
    ev = Evidence(
        summary,
        checks,
        norms if norms is not None else pd.DataFrame(columns=["model", "attack", "min_norm"]),
        companion if companion is not None else pd.DataFrame(),
    )
    models = [m for m in dict.fromkeys(summary["model"]) if not m.endswith(ADAPTIVE_SUFFIX)]
    return [
        ModelChecklist(m, [(ind, ind.judge(m, summary[summary["model"] == m], ev)) for ind in INDICATORS])
        for m in models
    ]


CHECKLIST_INTRO = (
    "Indicators after Carlini et al. 2019 (On Evaluating Adversarial Robustness) and Pintor et al. 2022 "
    "(Indicators of Attack Failure). Status: ok, RAISED (a sign the attacks failed), not run (the run lacks "
    "the evidence; the command that gives it is named)."
)


def checklist(
    summary: pd.DataFrame,
    checks: dict,
    run_id: str,
    protocol: str,
    norms: pd.DataFrame | None = None,
    companion: pd.DataFrame | None = None,
) -> str:
    """The checklist document (Markdown) of one run; ``norms``: its per-example minimal norms
    (report.runs.minimal_norms), for the indicators that read the minimum-norm curve; ``companion``:
    the summary of a run of the other restart protocol on the same examples (report.runs.restart_companion)."""
    lines = [f"# Evaluation checklist: run {run_id} (protocol {protocol})", "", CHECKLIST_INTRO, ""]
    lines += [f"**{part}.**\n" for part in incomplete_parts(summary)]
    for one in checklist_findings(summary, checks, norms, companion):
        lines += [f"## {one.model}", "", "| indicator | covers | status | evidence |", "|---|---|---|---|"]
        lines += [f"| {ind.name} | {ind.covers} | {f.status} | {f.evidence} |" for ind, f in one.findings]
        lines += ["", f"**Verdict for {one.model}: {one.verdict}.**", ""]
    return "\n".join(lines)

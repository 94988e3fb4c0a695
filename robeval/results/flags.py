"""Soundness checks of an evaluation, after AutoAttack's flags and the literature on evaluating
defenses (Carlini et al. 2019; Croce & Hein 2020).  Each flag says what it means and what to do.

The model-level checks run on the first batch of each model during the run (they need the model:
robeval.evaluation.model_checks); their values, and the summaries of the stored records, become flags here.  ``robeval check RUN_ID`` prints both for a stored run.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from ..attacks import get_attack_spec, list_attacks
from ..defaults import CLEAN, NOT_ATTACKS
from ..evaluation.config import ADAPTIVE_SUFFIX
from ..shifts.kinds import get_shift
from .convergence import convergence_rows

GRADIENT_FAILURE_SHARE = 0.01  # more than 1% of examples with zero or NaN input gradients
MASKING_GAP = 1.0  # percentage points
PRECISION_P = 0.05  # one-sided p-value of the paired test below which reduced precision weakened an attack
CHANCE_P = 0.01  # a clean top-1 whose exact test against guessing gives p at or above this is near chance


@dataclass
class Flag:
    check: str
    model: str
    message: str
    advice: str


def flags_from_model_checks(model: str, checks: dict[str, Any]) -> list[Flag]:
    flags = []
    if checks["relative_logit_change_between_passes"] > 1e-5:
        flags.append(
            Flag(
                "randomness",
                model,
                f"logits differ between two identical passes (relative change "
                f"{checks['relative_logit_change_between_passes']:.2g})",
                "the model is randomized; gradient attacks need EOT: --set apgd-ce.eot_iter=20 (likewise "
                "pgd, fgsm, apgd-t, apgd-dlr), as AutoAttack's rand version does",
            )
        )
    if checks["outputs_are_probabilities"] or checks["outputs_are_log_probabilities"]:
        kind = "probabilities" if checks["outputs_are_probabilities"] else "log-probabilities"
        flags.append(
            Flag(
                "softmax-output",
                model,
                f"outputs look like {kind}, not logits",
                "return logits: losses on softmax outputs saturate and weaken gradient attacks",
            )
        )
    share = checks["share_zero_or_nan_gradients"]
    if share > GRADIENT_FAILURE_SHARE:
        flags.append(
            Flag(
                "zero-gradients",
                model,
                f"{100 * share:.1f}% of examples have zero or NaN input gradients",
                "gradients are masked or broken; trust black-box attacks (Square, SPSA) and check the model",
            )
        )
    return flags


def attacks_of_kind(names: set[str], kind: str) -> list[str]:
    """The registered attacks among ``names`` whose spec is of ``kind`` (white-box / black-box / transfer)."""
    return [spec.name for spec in list_attacks() if spec.name in names and spec.kind == kind]


# Attack kinds that must not beat the white-box attacks on a model: flag name, wording, advice.
BEATS_WHITE_BOX = {
    "black-box": (
        "gradient-masking",
        "black-box",
        "gradients likely masked; report the black-box number and try "
        "adaptive attacks (--adaptive for elliptical models)",
    ),
    "transfer": (
        "transfer-beats-white-box",
        "transferred from another model,",
        "the model's own gradients mislead white-box attacks (gradient masking); report the transfer number",
    ),
}


def kind_vs_white(rows: pd.DataFrame, kind: str) -> list[tuple[str, float, float]]:
    """At one eps of one model: (attack, its top-1, the best white-box top-1) for each attack of
    ``kind`` beside a white-box one."""
    top1 = rows.set_index("attack")["top1"]
    white = attacks_of_kind(set(top1.index), "white-box")
    if not white:
        return []
    best = min(float(top1[a]) for a in white)
    return [(a, float(top1[a]), best) for a in attacks_of_kind(set(top1.index), kind)]


def rising_with_eps(rows: pd.DataFrame) -> list[tuple[str, str, float, str, float]]:
    """One model's rows: (attack, eps, top-1, next eps, higher top-1) wherever top-1 rises with eps."""
    out = []
    for attack in [a for a in dict.fromkeys(rows["attack"]) if a != CLEAN]:
        sel = rows[rows["attack"] == attack].sort_values("eps_value")
        pairs = list(zip(sel["eps"], sel["top1"]))
        out += [(attack, e1, v1, e2, v2) for (e1, v1), (e2, v2) in zip(pairs, pairs[1:]) if v2 > v1 + 1e-9]
    return out


def flags_from_summary(summary: pd.DataFrame) -> list[Flag]:
    flags: list[Flag] = []
    for model in dict.fromkeys(summary["model"]):
        sel = summary[summary["model"] == model]
        for eps in dict.fromkeys(sel["eps"]):
            at_eps = sel[sel["eps"] == eps]
            for kind, (check, what, advice) in BEATS_WHITE_BOX.items():
                for attack, value, best_white in kind_vs_white(at_eps, kind):
                    if value < best_white - MASKING_GAP:
                        flags.append(
                            Flag(
                                check,
                                model,
                                f"at eps {eps}, {what} {attack} top-1 {value:.2f} is below "
                                f"the best white-box attack ({best_white:.2f})",
                                advice,
                            )
                        )
            flags += minimum_norm_flags(at_eps, model, eps)
        for attack, e1, v1, e2, v2 in rising_with_eps(sel):
            flags.append(
                Flag(
                    "eps-monotonicity",
                    model,
                    f"{attack} top-1 rises from {v1:.2f} at eps {e1} to {v2:.2f} at eps {e2}",
                    "the attack is not converging; raise its iterations "
                    "or restarts (--set) — a larger budget can only help a correct attack",
                )
            )
    return (
        chance_flags(summary) + flags + precision_flags(summary) + adaptive_flags(summary) + convergence_flags(summary)
    )


def chance_p_value(hits: int, n: int, classes: int) -> float:
    """One-sided exact binomial test: the chance that guessing uniformly among ``classes`` classes gets
    ``hits`` or more of ``n`` examples right."""
    from scipy.stats import binom

    return float(binom.sf(hits - 1, n, 1.0 / classes))


def near_chance(top1: float, n: int, classes: int) -> tuple[bool, float]:
    """Whether a clean top-1 (%) on ``n`` examples is near chance (1 / ``classes``), and the test's p-value.

    Near chance: not significantly above it (p >= CHANCE_P, what a few examples allow), or, with three
    classes or more, under twice it (on many examples 12% on 10 classes is "significant" and still
    no classifier worth attacking)."""
    p = chance_p_value(round(top1 * n / 100.0), n, classes)
    return p >= CHANCE_P or (classes >= 3 and top1 < 200.0 / classes), p


def chance_rows(summary: pd.DataFrame) -> pd.DataFrame:
    """The clean rows of data that holds the model's own distribution (no shift, or a corruption
    benchmark's clean images; not ImageNet-A and its kind, where low accuracy is the finding), with a
    number of classes."""
    if "classes" not in summary:
        return summary.iloc[0:0]
    shift = summary["shift"].fillna("") if "shift" in summary else pd.Series("", index=summary.index)
    own = shift.map(lambda s: not s or get_shift(s).has_conditions)
    return summary[(summary["attack"] == CLEAN) & own & summary["classes"].notna() & (summary["classes"] > 1)]


def chance_flags(summary: pd.DataFrame) -> list[Flag]:
    """Models whose clean accuracy is near chance: their robust accuracies measure nothing."""
    flags = []
    for r in chance_rows(summary).itertuples():
        found, p = near_chance(float(r.top1), int(r.n), int(r.classes))
        if found:
            flags.append(
                Flag(
                    "near-chance",
                    r.model,
                    f"clean top-1 {r.top1:.2f}% on {r.n} examples is near chance ({100 / r.classes:.2f}% for "
                    f"{int(r.classes)} classes; exact test of it being above chance: p = {p:.2g})",
                    "the model does not classify these images: check that it takes [0,1] images with its "
                    "normalisation inside (a module expecting normalised input does this), its weights "
                    "(--checkpoint; --weights random is untrained) and the label order (--class-map)",
                )
            )
    return flags


def convergence_flags(summary: pd.DataFrame) -> list[Flag]:
    """Attacks whose convergence curve still falls over the last tenth of its budget by more than the
    noise test allows (robeval.results.convergence)."""
    return [
        Flag(
            "not-converged",
            r["model"],
            f"at eps {r['eps']}, {r['attack']} fooled {r['fell']} more examples over the last tenth of its budget "
            f"(robust top-1 {r['start']:.2f} -> {r['end']:.2f}, more than the standard error {r['noise']:.2f})",
            f"the attack has not converged: lengthen it ({r['advice']}) and report the lower number",
        )
        for r in convergence_rows(summary)
        if r["falling"]
    ]


def adaptive_flags(summary: pd.DataFrame) -> list[Flag]:
    """Models whose attacks with gradients through the data-dependent weight do better than without."""
    gaps = adaptive_gaps(summary)
    return [
        Flag(
            "adaptive-gap",
            r.model,
            f"at eps {r.eps}, {r.attack} with gradients through M gives top-1 "
            f"{r.top1_adaptive:.2f}, {r.gap:.2f} points below the default ({r.top1_default:.2f})",
            "the detached M masks gradients; report the adaptive numbers",
        )
        for r in (gaps[gaps["gap"] > MASKING_GAP] if len(gaps) else gaps).itertuples()
    ]


def paired_p_value(worse: int, better: int) -> float:
    """One-sided exact sign test (McNemar): the chance of ``worse`` or more of ``worse + better``
    discordant pairs going one way when either way is equally likely."""
    n = worse + better
    return sum(math.comb(n, k) for k in range(worse, n + 1)) / 2**n if n else 1.0


def precision_flags(summary: pd.DataFrame) -> list[Flag]:
    """Rows whose attack, crafted again in fp32 on a sample, fools more examples than it did in the
    run's reduced precision, beyond chance: the examples it fooled only in fp32 against those it fooled
    only in the reduced precision (robeval.evaluation.precision_check)."""
    if "fp32_checked" not in summary:
        return []
    flags = []
    for r in summary[summary["fp32_checked"] > 0].itertuples():
        worse, better = int(r.fp32_fooled), int(r.fp32_rescued)
        p = paired_p_value(worse, better)
        if worse > better and p < PRECISION_P:
            gap = 100.0 * (worse - better) / r.fp32_checked
            flags.append(
                Flag(
                    "reduced-precision",
                    r.model,
                    f"at eps {r.eps}, {r.attack} crafted in {r.precision} left {worse} of {r.fp32_checked} "
                    f"re-checked examples robust that it fools crafted in fp32 ({better} the other way, "
                    f"p = {p:.3g}): its top-1 is about {gap:.1f} points too high",
                    "reduced precision weakens this attack on this model: report a --precision fp32 run",
                )
            )
    return flags


def noise_points(top1: float, n: int) -> float:
    """Two standard errors of a top-1 (%) measured on ``n`` examples, and never under one example."""
    p = min(max(top1 / 100.0, 0.0), 1.0)
    return max(100.0 / max(n, 1), 200.0 * (p * (1 - p) / max(n, 1)) ** 0.5)


def minimum_norm_comparison(rows: pd.DataFrame) -> list[tuple[str, float, str, float, float]]:
    """At one eps of one model: (minimum-norm attack, its top-1, best fixed-eps white-box attack, its
    top-1, the noise allowed between them) for each minimum-norm attack beside a fixed-eps one."""
    top1 = rows.set_index("attack")["top1"]
    white = attacks_of_kind(set(top1.index), "white-box")
    searches = [a for a in white if get_attack_spec(a).minimum_norm]
    fixed = [a for a in white if a not in searches]
    if not fixed or not searches:
        return []
    n = int(rows["n"].max())
    best = min(fixed, key=lambda a: top1[a])
    return [(a, float(top1[a]), best, float(top1[best]), noise_points(float(top1[best]), n)) for a in searches]


def minimum_norm_flags(rows: pd.DataFrame, model: str, eps: str) -> list[Flag]:
    """A minimum-norm curve must meet the fixed-eps attacks at their eps, within the noise: above them
    the search stopped early; below them the fixed-eps attacks missed fooling points that exist."""
    flags = []
    for search, value, fixed, best, noise in minimum_norm_comparison(rows):
        budget = next(k for k in ("steps", "n_iter") if k in get_attack_spec(search).defaults)
        if value > best + noise:
            flags.append(
                Flag(
                    "minimum-norm-weaker",
                    model,
                    f"at eps {eps}, {search} top-1 {value:.2f} lies above "
                    f"{fixed} ({best:.2f}) by more than the noise ({noise:.2f})",
                    f"the minimum-norm search did not converge; raise its budget (--set {search}.{budget}=200) "
                    "before reading the curve (in L2, fab-mn copes with saturated pixels better than fmn)",
                )
            )
        elif value < best - noise:
            flags.append(
                Flag(
                    "fixed-eps-missed",
                    model,
                    f"at eps {eps}, {search} finds fooling points within eps for "
                    f"{best - value:.2f} points more examples than {fixed} ({value:.2f} vs {best:.2f})",
                    "the fixed-eps attacks failed to converge; raise their iterations or restarts and "
                    "report the lower number (the Any column includes the minimum-norm attack)",
                )
            )
    return flags


def adaptive_gaps(summary: pd.DataFrame) -> pd.DataFrame:
    """Default vs adaptive (gradient through M) top-1 for every elliptical model evaluated with --adaptive."""
    rows = []
    s = summary.set_index(["model", "eps", "attack"])["top1"]
    for (model, eps, attack), value in s.items():
        if model.endswith(ADAPTIVE_SUFFIX) and attack not in NOT_ATTACKS:
            base = model[: -len(ADAPTIVE_SUFFIX)]
            if (base, eps, attack) in s.index:
                rows.append(
                    {
                        "model": base,
                        "eps": eps,
                        "attack": attack,
                        "top1_default": s[(base, eps, attack)],
                        "top1_adaptive": value,
                        "gap": round(s[(base, eps, attack)] - value, 2),
                    }
                )
    return pd.DataFrame(rows)


def all_flags(summary: pd.DataFrame, model_check_results: dict[str, dict[str, Any]]) -> list[Flag]:
    flags = []
    for model, checks in model_check_results.items():
        flags += flags_from_model_checks(model, checks)
    return flags + flags_from_summary(summary)


def as_dicts(flags: list[Flag]) -> list[dict[str, str]]:
    return [asdict(f) for f in flags]

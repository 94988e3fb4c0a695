"""The soundness checks of an evaluation, one registration each (robeval.results.findings): after
AutoAttack's flags, Carlini et al. 2019 ("On Evaluating Adversarial Robustness", their checklist) and
Pintor et al. 2022 ("Indicators of Attack Failure", their six indicators); each names what it covers.

The model checks (randomness, softmax outputs, gradients) read values measured on the first batch of
each model during the run (robeval.evaluation.model_run.model_checks); the others read the summaries of the
stored records.  robeval.results.soundness runs them all over a run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pandas as pd

from ..attacks import ATTACKS, list_attacks
from ..core.defaults import ANY, CLEAN, NOT_ATTACKS, names_in
from ..evaluation.fast.summary import BOUND_WIDTH, wide_bound
from ..evaluation.protocols import restarted_attacks
from ..models.recipes import member_recipes, recipe_differences, recipe_text
from ..models.registry import MODELS
from ..shifts.kinds import SHIFT_KINDS
from .convergence import lengthen, standard_error, still_falling, why_no_curves
from .findings import (
    MIN_EXAMPLES,
    NOT_APPLICABLE,
    NOT_RUN,
    Evidence,
    Finding,
    Judge,
    beyond,
    caveat,
    check,
    judged,
    observed,
)
from .statistics import paired_p_value
from .summary import add_model_columns

GRADIENT_FAILURE_SHARE = 0.01  # more than 1% of examples with zero or NaN input gradients
RANDOM_CHANGE = 1e-5  # relative logit change between two identical passes
PRECISION_P = 0.05  # one-sided p-value of the paired test below which reduced precision weakened an attack
CHANCE_P = 0.01  # a clean top-1 whose exact test against guessing gives p at or above this is near chance
LARGE_EPS = 64 / 255  # at this budget a working attack leaves (almost) no image correctly classified
NEAR_ZERO = 1.0  # % top-1
NOT_MEASURED = Finding(NOT_RUN, "the model checks ran in another process of this run or were not stored")
ADAPTIVE_COPY = Finding(NOT_APPLICABLE, "an --adaptive evaluation: attacks that use no gradient of it are the model's")


def near_chance(top1: float, n: int, classes: int) -> tuple[bool, float]:
    """Whether a clean top-1 (%) on ``n`` examples is near chance (1 / ``classes``), and the test's p-value.

    Near chance: not significantly above it (p >= CHANCE_P, what a few examples allow), or, with three
    classes or more, under twice it (on many examples 12% on 10 classes is "significant" and still
    no classifier worth attacking).  The test: the chance that guessing uniformly among ``classes``
    classes gets as many right, one-sided and exact."""
    from scipy.special import bdtrc  # (binom.sf's own function: scipy.stats imports in half a second)

    p = float(bdtrc(round(top1 * n / 100.0) - 1, n, 1.0 / classes))
    return p >= CHANCE_P or (classes >= 3 and top1 < 200.0 / classes), p


def noise_points(top1: float, n: int) -> float:
    """Two standard errors of a top-1 (%) measured on ``n`` examples, and never under one example."""
    p = min(max(top1 / 100.0, 0.0), 1.0)
    return max(100.0 / max(n, 1), 200.0 * (p * (1 - p) / max(n, 1)) ** 0.5)


@check("near-chance", "Clean accuracy is above chance",
       "Carlini et al. checklist (sanity-check the evaluation: report clean accuracy; a model at chance on clean "
       "images, e.g. one fed unnormalised input, measures nothing under attack)",
       "the model does not classify these images: check that it takes [0,1] images with its normalisation inside (a "
       "module expecting normalised input does this), its weights (--checkpoint; --weights random is untrained) and "
       "the label order (--class-map)")  # fmt: skip
def above_chance(model: str, rows: pd.DataFrame, ev: Evidence | None = None) -> Finding:
    """The first clean row, with a number of classes, on data of the model's own distribution (no shift, or a
    corruption benchmark's clean images; not ImageNet-A and its kind, where low accuracy is the finding)
    against chance (none: not applicable)."""
    shift = rows["shift"].fillna("") if "shift" in rows else pd.Series("", index=rows.index)
    own = shift.map(lambda s: not s or SHIFT_KINDS.require(s).has_conditions)
    found = rows[(rows["attack"] == CLEAN) & own & (rows["classes"] > 1)] if "classes" in rows else rows.iloc[0:0]
    if found.empty:
        return Finding(NOT_APPLICABLE, "no clean row on the model's own data (a shift data set, or no class count)")
    r = found.iloc[0]
    near, p = near_chance(float(r["top1"]), int(r["n"]), int(r["classes"]))
    return judged(
        near,
        f"clean top-1 {r['top1']:.2f}% on {int(r['n'])} examples is {'near' if near else 'above'} chance "
        f"({100 / r['classes']:.2f}% for {int(r['classes'])} classes; exact test of it being above chance: p = {p:.2g})",
    )


def measured(read: Callable[[dict[str, Any]], tuple[bool, str]]) -> Judge:
    """A check of the values measured on the model's first batch (robeval.evaluation.model_run.model_checks):
    ``read(values)`` says whether it is raised, and its evidence."""

    def judge(model: str, rows: pd.DataFrame, ev: Evidence) -> Finding:
        return judged(*read(ev.model_checks[model])) if model in ev.model_checks else NOT_MEASURED

    return judge


def logit_change(values: dict[str, Any]) -> tuple[bool, str]:
    change = values["relative_logit_change_between_passes"]
    return change > RANDOM_CHANGE, f"relative logit change between two identical passes {change:.2g}"


def broken_gradients(values: dict[str, Any]) -> tuple[bool, str]:
    share, checked = values["share_zero_or_nan_gradients"], values.get("examples_checked")
    broken = round(share * checked) if checked else None  # (a run stored before the count: the share alone)
    count = f"{broken} of {checked} checked examples" if checked else "of the checked examples"
    many = share > GRADIENT_FAILURE_SHARE and (broken is None or broken >= MIN_EXAMPLES)
    return many, f"{count} ({100 * share:.1f}%) have zero or NaN input gradients"


def probabilities(values: dict[str, Any]) -> tuple[bool, str]:
    kind = next((k for k in ("probabilities", "log-probabilities") if values[f"outputs_are_{k.replace('-', '_')}"]), "")
    return bool(kind), f"outputs look like {kind}, not logits" if kind else "outputs are logits"


check("randomness", "Randomness at inference",
      "Carlini et al. checklist (randomised defences need EOT); Pintor et al.: Unstable Predictions",
      "the model is randomized; gradient attacks need EOT: --set apgd-ce.eot_iter=20 (likewise pgd, fgsm, apgd-t, "
      "apgd-dlr), as AutoAttack's rand version does")(measured(logit_change))  # fmt: skip
check("softmax-output", "Outputs are logits", "Carlini et al. checklist (losses on logits, not softmax outputs)",
      "return logits: losses on softmax outputs saturate and weaken gradient attacks")(measured(probabilities))  # fmt: skip
check("zero-gradients", "Input gradients exist",
      "Pintor et al.: Unavailable Gradients; Carlini et al. checklist (gradient masking)",
      "gradients are masked or broken; trust black-box attacks (Square, SPSA) and check the model")(measured(broken_gradients))  # fmt: skip


def attacks_of_kind(names: set[str], kind: str) -> list[str]:
    """The registered attacks among ``names`` whose spec is of ``kind`` (white-box / black-box / transfer)."""
    return [spec.name for spec in list_attacks() if spec.name in names and spec.kind == kind]


def per_eps(rows: pd.DataFrame) -> Iterator[tuple[str, pd.Series, int]]:
    """A model's rows eps by eps: the eps, each attack's top-1 there, and its examples (the most of any row)."""
    for eps, at_eps in rows.groupby("eps", sort=False):
        yield eps, at_eps.set_index("attack")["top1"], int(at_eps["n"].max())


def kind_vs_white(rows: pd.DataFrame, kind: str) -> list[tuple[str, bool]]:
    """Per eps, each attack of ``kind`` beside the best white-box one, and whether it beats it."""
    lines: list[tuple[str, bool]] = []
    for eps, top1, n in per_eps(rows):
        white = attacks_of_kind(set(top1.index), "white-box")
        others = attacks_of_kind(set(top1.index), kind) if white else []
        best = min(float(top1[a]) for a in white) if white else 0.0
        lines += [(f"eps {eps}: {a} {float(top1[a]):.2f} vs best white-box {best:.2f}", beyond(best - float(top1[a]), n))
                  for a in others]  # fmt: skip
    return lines


@check("gradient-masking", "Black-box attacks do not beat white-box ones",
       "Carlini et al. checklist (try gradient-free attacks)")  # fmt: skip
def black_box(model: str, rows: pd.DataFrame, ev: Evidence) -> Finding:
    if rows["adaptive"].any():
        return ADAPTIVE_COPY
    adaptive = _takes_adaptive(_base(model, rows), ev)
    advice = "gradients likely masked; report the black-box number" + (
        " and evaluate it with --adaptive (gradients through its data-dependent weight)" if adaptive else ""
    )
    return observed(kind_vs_white(rows, "black-box"), "no black-box attack next to a white-box one in this run "
                    "(robeval run ... --attacks pgd,square)", advice)  # fmt: skip


@check("transfer-beats-white-box", "Transfer attacks do not beat white-box ones",
       "Carlini et al. checklist (try transfer attacks); Pintor et al.: Transfer Failure",
       "the model's own gradients mislead white-box attacks (gradient masking); report the transfer number")  # fmt: skip
def transfer(model: str, rows: pd.DataFrame, ev: Evidence) -> Finding:
    if rows["adaptive"].any():
        return ADAPTIVE_COPY
    # the transfer source a run of it can use: a registered model with weights, other than itself, that takes
    # its images and gives its classes (read from the run's stored model facts)
    facts = ev.models.get(model) or {}
    size, classes = tuple(facts.get("input_size") or ()), facts.get("num_classes")
    source = next((s.name for s in MODELS.values() if size and s.name != model and s.has_default_weights and
                   s.config is not None and (tuple(s.config.input_size or ()), s.config.num_classes) == (size, classes)),
                  None)  # fmt: skip
    how = (
        f"robeval run ... --attacks pgd,transfer-pgd --source-model {source}"
        if source
        else "no registered model with weights takes its images and classes: --source-model PATH.py:CALLABLE"
    )
    return observed(kind_vs_white(rows, "transfer"), f"no transfer attack next to a white-box one in this run ({how})")


@check("one-step-beats-iterative", "Iterative attacks beat one step",
       "Carlini et al. checklist (iterative attacks should outperform single-step ones)",
       "PGD does worse than its own first step: too few or too small steps, or masked gradients; raise pgd.steps "
       "(--set), check pgd.rel_stepsize, and report the lower number")  # fmt: skip
def iterative(model: str, rows: pd.DataFrame, ev: Evidence) -> Finding:
    lines = [
        (f"eps {eps}: PGD {top1['pgd']:.2f}, FGSM {top1['fgsm']:.2f}", beyond(float(top1["pgd"] - top1["fgsm"]), n))
        for eps, top1, n in per_eps(rows)
        if "fgsm" in top1 and "pgd" in top1
    ]
    return observed(lines, "no FGSM and PGD pair (robeval run ... --attacks fgsm,pgd)")


@check("eps-monotonicity", "Accuracy falls as eps grows",
       "Carlini et al. checklist (a larger budget never helps the model); Pintor et al.: Non-converging Attack",
       "the attack is not converging; raise its iterations or restarts (--set) — a larger budget can only help a "
       "correct attack")  # fmt: skip
def monotone(model: str, rows: pd.DataFrame, ev: Evidence) -> Finding:
    if rows["eps"].nunique() < 2:
        return Finding(NOT_RUN, "one eps only (robeval run ... --eps 1/255,2/255,4/255,8/255)")
    lines = []
    for attack in [a for a in dict.fromkeys(rows["attack"]) if a != CLEAN]:
        sel = rows[rows["attack"] == attack].sort_values("eps_value")
        pairs = list(zip(sel["eps"], sel["top1"], sel["n"]))
        lines += [
            (f"{attack} top-1 rises from {v1:.2f} at eps {e1} to {v2:.2f} at eps {e2}", beyond(v2 - v1, int(n), 0.0))
            for (e1, v1, _), (e2, v2, n) in zip(pairs, pairs[1:])
        ]
    if not any(bad for _, bad in lines):
        return judged(False, f"non-increasing over {rows['eps'].nunique()} eps values for every attack "
                      f"(within {MIN_EXAMPLES - 1} example)")  # fmt: skip
    return observed(lines, "")


def _base(model: str, rows: pd.DataFrame) -> str:
    """The model a model's rows evaluate (its name without a combined table's run label or --adaptive)."""
    return str(rows["base_model"].iloc[0]) if len(rows) else model


def _takes_adaptive(model: str, ev: Evidence) -> bool:
    """Whether ``model`` has options that let attacks see through a data-dependent weight, as its run
    recorded them (``adaptive_options``); for a run stored before that, as robeval's own registration
    says, without importing a plugin or a model source.  Unknown (the user's code, a renamed model of a
    combined table): True."""
    meta = ev.models.get(model, {})
    if "adaptive_options" in meta:
        return bool(meta["adaptive_options"])
    spec = MODELS.get(model) if "registered" not in meta else None
    return spec.is_adaptive if spec is not None else True


@check("large-eps-not-zero", "Accuracy reaches 0 at a large eps",
       "Carlini et al. checklist (an unbounded attack must succeed always)",
       "at this budget a working attack fools (almost) every image: the attacks fail on this model (masked gradients "
       "or a broken loss); trust black-box attacks and check the model")  # fmt: skip
def reaches_zero(model: str, rows: pd.DataFrame, ev: Evidence) -> Finding:
    white = rows[rows["attack"].isin(attacks_of_kind(set(rows["attack"]), "white-box"))]
    large = white[white["eps_value"] >= LARGE_EPS - 1e-9]
    found = [(f"lowest fixed-eps white-box top-1 at eps >= 64/255: {large['top1'].min():.2f}%", float(large["top1"].min()),
              int(large["n"].max()))] if len(large) else []  # fmt: skip
    for attack, norms in ev.norms[ev.norms["model"] == model].groupby("attack", sort=False):
        at_large = 100.0 * float((norms["min_norm"] > LARGE_EPS).mean())
        found.append((f"{attack} curve at 64/255: {at_large:.2f}%", at_large, len(norms)))
    if not found:
        return Finding(NOT_RUN, "no white-box attack at eps >= 64/255 and no minimum-norm curve in this run "
                       "(robeval check --report FILE --run-missing makes a PGD run at 16/255 and 64/255; "
                       "or robeval run ... --attacks fmn)")  # fmt: skip
    _, lowest, n = min(found, key=lambda f: f[1])
    return judged(beyond(lowest, n, NEAR_ZERO), "; ".join(text for text, _, _ in found))


@check("minimum-norm-mismatch", "Minimum-norm curve meets the fixed-eps attacks",
       "Pintor et al.: Non-converging Attack and Incomplete Optimization; Carlini et al. checklist "
       "(minimum-distortion attacks, accuracy against distortion)")  # fmt: skip
def minimum_norm(model: str, rows: pd.DataFrame, ev: Evidence) -> Finding:
    """A minimum-norm curve must meet the fixed-eps attacks at their eps, within the noise: above them
    the search stopped early; below them the fixed-eps attacks missed fooling points that exist.  Each
    minimum-norm attack at an eps is set against the best fixed-eps white-box attack there."""
    lines, advice = [], []
    for eps, top1, n in per_eps(rows):
        white = attacks_of_kind(set(top1.index), "white-box")
        searches = [a for a in white if ATTACKS.require(a).minimum_norm]
        fixed = min((a for a in white if a not in searches), key=lambda a: top1[a], default=None)
        for search in searches if fixed else []:
            value, best = float(top1[search]), float(top1[fixed])
            noise = noise_points(best, n)
            lines.append((f"eps {eps}: {search} {value:.2f} vs {fixed} {best:.2f} (noise {noise:.2f})",
                          abs(value - best) > noise))  # fmt: skip
            if value > best + noise:
                budget = next(k for k in ("steps", "n_iter") if k in ATTACKS.require(search).defaults)
                advice.append(f"{search} stopped early: raise its budget (--set {search}.{budget}=200) before reading "
                              "the curve (in L2, fab-mn copes with saturated pixels better than fmn)")  # fmt: skip
            elif value < best - noise:
                advice.append(f"{fixed} missed fooling points that {search} found: raise its iterations or restarts "
                              "and report the lower number (the Any column includes the minimum-norm attack)")  # fmt: skip
    none = "no minimum-norm attack beside a fixed-eps white-box one (robeval run ... --attacks pgd,apgd-ce,fmn)"
    return observed(lines, none, "; ".join(dict.fromkeys(advice)))


@check("restarts-change-result", "Restarts do not change the result",
       "Pintor et al.: Incomplete Optimization; Carlini et al. checklist (random restarts)",
       "one restart leaves examples robust that five restarts fool: report the aa-plus (5 restarts) numbers")  # fmt: skip
def restarts(model: str, rows: pd.DataFrame, ev: Evidence) -> Finding:
    """This run against a finished run of the other restart protocol (standard: one restart; aa-plus:
    five) on the same models, data, examples and eps, found in the same store."""
    other = ev.companion[ev.companion["model"] == model] if len(ev.companion) else ev.companion
    lines = []
    for r in other.itertuples():
        mine = rows[(rows["eps"] == r.eps) & (rows["attack"] == r.attack)]
        if r.attack in restarted_attacks() and not mine.empty:
            this_run, that_run = float(mine["top1"].iloc[0]), float(r.top1)
            one, five = (this_run, that_run) if mine["protocol"].iloc[0] == "standard" else (that_run, this_run)
            noise = noise_points(one, int(r.n))
            lines.append((f"eps {r.eps}: {r.attack} {one:.2f} with 1 restart, {five:.2f} with 5 (noise {noise:.2f}) "
                          f"(run {r.run_id})", five < one - noise))  # fmt: skip
    plus = "protocol" in rows and (rows["protocol"] == "aa-plus").any()
    return observed(lines, (
        "the reported numbers include 5 restarts; a run with --protocol standard of the same "
        "models and examples in this store shows whether they changed the result"
    ) if plus else "one restart per attack; a run with --protocol aa-plus of the same models and examples in this "
        "store shows whether more restarts change the result")  # fmt: skip


def adaptive_gaps(summary: pd.DataFrame) -> pd.DataFrame:
    """Default vs adaptive (gradient through M) top-1 for every elliptical model evaluated with --adaptive,
    per attack (a shifted condition has no gradient to pass through M: its forward is the same)."""
    rows: list[dict[str, Any]] = []
    if summary.empty:
        return pd.DataFrame(rows)
    summary = summary if "adaptive" in summary else add_model_columns(summary.copy())  # (a summary made by hand)
    key = ["base_model", "eps", "attack"]
    adaptive = summary["adaptive"].fillna(False).astype(bool)
    default = summary[~adaptive].drop_duplicates(key).set_index(key)["top1"]
    shifted = summary["corruption"].fillna("") != "" if "corruption" in summary else False
    for r in summary[adaptive & ~summary["attack"].isin(NOT_ATTACKS) & ~shifted].itertuples():
        if (r.base_model, r.eps, r.attack) in default.index:
            before = float(default.loc[(r.base_model, r.eps, r.attack)])
            rows.append(dict(model=r.base_model, eps=r.eps, attack=r.attack, top1_default=before, top1_adaptive=r.top1,
                             gap=round(before - r.top1, 2), n=int(r.n)))  # fmt: skip
    return pd.DataFrame(rows)


@check("adaptive-gap", "Adaptive attack (gradients through the data-dependent weight)",
       "Carlini et al. checklist (adaptive attacks)",
       "the detached M masks gradients; report the adaptive numbers")  # fmt: skip
def adaptive(model: str, rows: pd.DataFrame, ev: Evidence) -> Finding:
    if rows["adaptive"].any():
        return Finding(NOT_APPLICABLE, "the adaptive evaluation itself")
    base = _base(model, rows)
    if not _takes_adaptive(base, ev):
        return Finding(NOT_APPLICABLE, "no data-dependent attention weight to differentiate through")
    gaps = adaptive_gaps(ev.summary)
    lines = [
        (f"eps {r.eps}: {r.attack} {r.top1_default:.2f} -> {r.top1_adaptive:.2f} with gradients through M", beyond(r.gap, r.n))
        for r in (gaps[gaps["model"] == base] if len(gaps) else gaps).itertuples()
    ]  # fmt: skip
    return observed(lines, "no +adaptive evaluation of this model (robeval run ... --adaptive)")


@check("reduced-precision", "Reduced precision does not weaken the attacks",
       "Carlini et al. checklist (verify the attack is as strong as it can be): attacks crafted in bf16/fp16 checked "
       "again in fp32",
       "reduced precision weakens this attack on this model: report a --precision fp32 run")  # fmt: skip
def precision(model: str, rows: pd.DataFrame, ev: Evidence) -> Finding:
    """Attacks crafted again in fp32 on a sample that fool more examples than in the run's reduced
    precision, beyond chance: the examples fooled only in fp32 against those fooled only in the reduced
    precision, a one-sided exact sign test (:func:`paired_p_value`)."""
    crafted = [p for p in dict.fromkeys(rows.get("precision", pd.Series(["fp32"]))) if p != "fp32"]
    if not crafted:
        return Finding(NOT_APPLICABLE, "attacks crafted in strict fp32")
    checked = rows[rows["fp32_checked"] > 0] if "fp32_checked" in rows else rows.iloc[0:0]
    lines = []
    for r in checked.itertuples():
        worse, better = int(r.fp32_fooled), int(r.fp32_rescued)
        p = paired_p_value(worse, better)
        lines.append((f"eps {r.eps}: {r.attack} crafted in {r.precision} left {worse} of {r.fp32_checked} re-checked "
                      f"examples robust that it fools crafted in fp32 ({better} the other way, p = {p:.3g}, about "
                      f"{100.0 * (worse - better) / r.fp32_checked:.1f} points)", worse > better and p < PRECISION_P))  # fmt: skip
    return observed(lines, f"crafted in {crafted[0]}, with no white-box attack re-checked in fp32")


@check("not-converged", "The attacks converged",
       "Pintor et al.: Non-converging Attack; Carlini et al. checklist (run attacks to convergence: accuracy against "
       "iterations levels off)")  # fmt: skip
def converged(model: str, rows: pd.DataFrame, ev: Evidence) -> Finding:
    """Each curve's fall over the last tenth of its budget against the noise test (results.convergence)."""
    curves = rows[rows["curve_robust_90"].notna()] if "curve_robust_90" in rows else rows.iloc[0:0]
    lines, advice = [], []
    for r in curves.itertuples():
        start, end, n = int(r.curve_robust_90), int(r.curve_robust_end), int(r.curve_examples)
        lines.append((f"eps {r.eps}: {r.attack} {100 * start / n:.2f} -> {100 * end / n:.2f} over the last tenth "
                      f"({start - end} examples fooled, standard error {100 * standard_error(start, n):.3g})",
                      still_falling(start, end, n)))  # fmt: skip
        advice += [lengthen(r.attack, getattr(r, "settings", None))] if lines[-1][1] else []
    return observed(lines, why_no_curves(rows), f"the attack has not converged: lengthen it ({'; '.join(advice)}) "
                    "and report the lower number")  # fmt: skip


@check("one-checkpoint", "Claims rest on several checkpoints",
       "the seed papers' std tables (Hosseini & Hosseini 2024, rebuttal: std over 5 training runs): a comparison of "
       "two training procedures varies from seed to seed",
       "to compare training procedures, evaluate several members per model (robeval train-demo --seeds 0-2; "
       "--checkpoint NAME=A,B,C) and test the difference with robeval compare", claim=True)  # fmt: skip
def several_checkpoints(model: str, rows: pd.DataFrame, ev: Evidence) -> Finding:
    base = _base(model, rows)  # (its +adaptive copy is itself)
    family = ev.models.get(base, {}).get("family")
    others = [m for m in dict.fromkeys(ev.summary["base_model"])
              if m != base and (family is None or ev.models.get(m, {}).get("family") != family)]  # fmt: skip
    if not others:
        return Finding(NOT_APPLICABLE, "no model of another kind in the run to compare with")
    several = "members" in rows and rows["members"].notna().any()  # (a summary of one member each has no column)
    members = int(rows["members"].max()) if several else 1
    if members > 1:
        return judged(False, f"{members} members: tables show mean ± std, robeval compare tests differences against "
                             "the seed-to-seed variation")  # fmt: skip
    return caveat("one checkpoint", "one checkpoint: the numbers are this checkpoint's, not its training procedure's "
                  "(another seed may move them by several points)")  # fmt: skip


@check("recipe", "Compared models share a training recipe",
       "the claim test's premise (robeval compare): a difference between two attention kinds is one of training "
       "procedures only when everything but the attention was trained alike; members differ only in their seed",
       "compare models trained with one recipe (robeval train-demo --epochs/--lr as the other's), or report the "
       "difference as one of recipes, not of attention kinds", claim=True)  # fmt: skip
def same_recipe(model: str, rows: pd.DataFrame, ev: Evidence) -> Finding:
    """The recipe each member's weights record, against each other and against every other model of the run."""
    base = _base(model, rows)
    own = member_recipes(ev.models.get(base, {}))
    others = [m for m in dict.fromkeys(ev.summary["base_model"]) if m != base]
    if len(own) < 2 and not others:
        return Finding(NOT_APPLICABLE, "one model of one member: nothing to compare its recipe with")
    compared = [(f"its member {i}", r) for i, r in enumerate(own[1:], start=2)]
    compared += [
        (other, member_recipes(ev.models.get(other, {}))[0]) for other in others
    ]  # (an unknown one: unlike none)
    lines = [f"{who}: {', '.join(d)}" for who, r in compared if own[0] and r and (d := recipe_differences(own[0], r))]
    if lines:
        return caveat("recipes differ", f"recipes differ (this model's vs the other's): {'; '.join(lines)}")
    unknown = [m for m in [base, *others] if None in member_recipes(ev.models.get(m, {}))]
    if unknown:
        return caveat("recipe unknown", f"recipe unknown for {', '.join(unknown)} (the weights record none): that the "
                      "compared models were trained alike is not shown", "record it: robeval train-demo writes it; a "
                      "training checkpoint's args do")  # fmt: skip
    return judged(False, f"one recipe: {recipe_text(own[0])}" + (f", as {', '.join(others)}" if others else ""))


@check("wide-bound", "The fast protocol's bound on AutoAttack is close to its result",
       f"the fast protocol's audit (robeval's own): its one-sided 95% lower bound on AutoAttack's robust accuracy, "
       f"within {BOUND_WIDTH:g} points of the fast result, lets the result stand for AutoAttack's", claim=True)  # fmt: skip
def audit_bound(model: str, rows: pd.DataFrame, ev: Evidence) -> Finding:
    """The bound an audited protocol puts on AutoAttack's robust accuracy against its own worst case, eps by
    eps (robeval.evaluation.fast.summary.wide_bound: the caption's warning reads the same)."""
    said = rows["audit"].map(lambda audit: bool(names_in(audit))) if "audit" in rows else False  # its audit stored
    audited = rows[said & (rows["attack"] == ANY)]
    if audited.empty:
        return Finding(NOT_APPLICABLE, "no audited protocol: the numbers are the attacks' own, not a bound on others'")
    worst = audited[audited["aa_bound"].notna()]
    if worst.empty:
        return judged(False, "every stage ran on every survivor: the result is AutoAttack's (no bound needed)")
    lines, needed = [], []
    for r in worst.to_dict("records"):
        wide = wide_bound(r)
        lines.append(f"eps {r['eps']}: AutoAttack's robust accuracy >= {r['aa_bound']:.2f}% against {r['top1']:.2f}%" +
                     (f", {wide[0]:.1f} points below, wider than {BOUND_WIDTH:g}" if wide else ""))  # fmt: skip
        needed += [f"about {wide[1]:,} examples at eps {r['eps']}"] if wide else []
    if not needed:
        return judged(False, "; ".join(lines) + f" (within {BOUND_WIDTH:g} points)")
    return caveat("wide bound", f"wide bound: {'; '.join(lines)}: it says little of AutoAttack's robust accuracy on "
                  f"{int(worst['n'].max())} examples", f"more examples narrow it ({', '.join(needed)} would bring it "
                  f"within {BOUND_WIDTH:g} points if the audit breaks none of its sample): --n-examples")  # fmt: skip

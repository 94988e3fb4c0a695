"""The soundness checks as one registry: every check can be raised, and a raised one is both a flag of
``robeval check`` and a RAISED row of its checklist (``check --report``) and of the HTML report, which
judge a run together with its evidence runs alike; restarts compared with a run of the other protocol."""

from __future__ import annotations

import re

import pandas as pd

from robeval.api import evaluate_full
from robeval.core.defaults import Phrases
from robeval.report.checklist import CHECKLIST_INTRO, Soundness, verdict
from robeval.results.findings import CHECKS, Finding
from robeval.results.soundness import JudgedRun, judge_summary
from robeval.store import StoredRun, existing_store

from .conftest import run_cli

ELLIPTICAL = "digits-deit-elliptical"  # registered, with a data-dependent weight (--adaptive applies)


def raising_everything() -> tuple[pd.DataFrame, dict, pd.DataFrame]:
    """A summary, run.json facts and a restart companion on which every registered check raises its
    finding (a check of the claim: its caveat) for ``ELLIPTICAL`` (100 examples, 10 classes, crafted in bf16,
    a fast protocol's worst case whose bound lies 10 points below it)."""
    top1 = {("clean", "8/255"): 10.0, ("pgd", "8/255"): 60.0, ("fgsm", "8/255"): 40.0, ("apgd-ce", "8/255"): 45.0,
            ("square", "8/255"): 20.0, ("transfer-pgd", "8/255"): 20.0, ("fmn", "8/255"): 80.0,
            ("pgd", "16/255"): 70.0, ("pgd", "64/255"): 50.0}  # fmt: skip
    rows = [dict(model=ELLIPTICAL, attack=a, eps=e, eps_value=int(e.split("/")[0]) / 255, top1=v, n=100, classes=10,
                 protocol="standard", precision="bf16") for (a, e), v in top1.items()]  # fmt: skip
    rows.append({**rows[1], "model": ELLIPTICAL + "+adaptive", "top1": 30.0})
    rows.append({**rows[0], "model": "digits-deit", "top1": 95.0})  # another kind, one checkpoint each
    rows.append({**rows[1], "attack": "any", "top1": 40.0, "protocol": "fast", "audit": Phrases(["audited"]), "aa_bound": 30.0})
    summary = pd.DataFrame(rows)
    pgd = (summary["model"] == ELLIPTICAL) & (summary["attack"] == "pgd") & (summary["eps"] == "8/255")
    summary.loc[pgd, ["fp32_checked", "fp32_fooled", "fp32_rescued"]] = [50, 10, 0]
    summary.loc[pgd, ["curve_robust_90", "curve_robust_end", "curve_examples", "settings"]] = [70, 60, 100, '{"steps": 20}']
    checks = {"relative_logit_change_between_passes": 0.1, "outputs_are_probabilities": True,
              "outputs_are_log_probabilities": False, "share_zero_or_nan_gradients": 0.5, "examples_checked": 16}  # fmt: skip
    companion = pd.DataFrame([dict(model=ELLIPTICAL, eps="8/255", attack="apgd-ce", top1=20.0, n=100, run_id="plus")])
    recipes = {ELLIPTICAL: {"recipe": {"epochs": "30", "lr": "0.001"}}, "digits-deit": {"recipe": {"epochs": "300", "lr": "0.001"}}}
    return summary, {"model_checks": {ELLIPTICAL: checks}, "models": recipes}, companion


def raised_rows(checklist: str) -> set[tuple[str, str]]:
    """(model, check) of every RAISED row of a checklist document."""
    titles = {c.title: name for name, c in CHECKS.items()}
    found = set()
    for section in checklist.split("\n## ")[1:]:
        model = section.splitlines()[0]
        found |= {(model, titles[r.split(" | ")[0][2:]]) for r in section.splitlines() if " | RAISED | " in r}
    return found


def flag_lines(printed: str) -> set[tuple[str, str]]:
    """(model, check) of every flag ``robeval check`` printed (the caveats on the claim, listed after them, are none)."""
    flags = printed.split("\nCaveats on the claim")[0]
    return set((m, c) for c, m in re.findall(r"^  \[([a-z0-9-]+)\] (\S+): ", flags, flags=re.M))


def test_every_registered_check_can_be_raised_and_check_prints_what_the_checklist_raises():
    summary, info, companion = raising_everything()
    models = judge_summary(summary, info, companion=companion)
    mine = next(one for one in models if one.model == ELLIPTICAL)
    shown = [f for f in mine.findings if f.raised or f.caveat]  # a caveat limits the claim, no failure
    assert [f.check for f in shown] == list(CHECKS)  # every registration, in registration order
    claims = [name for name, c in CHECKS.items() if c.claim]
    assert all(f.advice and f.evidence for f in shown) and [f.check for f in shown if f.caveat] == claims
    assert claims == ["one-checkpoint", "recipe", "wide-bound"]  # the checks of the claim: never RAISED
    judged = Soundness(JudgedRun(StoredRun("r", info, {"protocol": "standard"}, pd.DataFrame(), summary), [], models))
    document = judged.render("checklist")
    assert raised_rows(document) == flag_lines(judged.render("md")) == {(f.model, f.check) for f in judged.flags}
    assert (ELLIPTICAL, "not-converged") in raised_rows(document) and str(judged) == judged.render("md")
    said = verdict(mine)
    assert said.startswith("RAISED, not shown: Clean accuracy is above chance; ") and "Compared models" not in said
    assert said.endswith("; CAVEAT: one checkpoint, recipes differ, wide bound")


def alike_but_recipes() -> tuple[pd.DataFrame, dict]:
    """Two models of other kinds, one checkpoint each, trained with other recipes, whose attacks show no failure."""
    rows = [dict(model=m, attack=a, eps="8/255", eps_value=8 / 255, top1=v, n=100, classes=10, protocol="standard")
            for m in ("digits-deit", ELLIPTICAL) for a, v in (("clean", 95.0), ("fgsm", 70.0), ("pgd", 60.0))]  # fmt: skip
    recipes = {ELLIPTICAL: {"recipe": {"epochs": "30"}}, "digits-deit": {"recipe": {"epochs": "300"}}}
    return pd.DataFrame(rows), {"models": recipes}


def test_a_caveat_on_the_claim_reads_as_one_and_is_never_a_flag():
    """Recipes that differ and one checkpoint are caveats: the claim's table says CAVEAT beside what differs, the
    verdict names them after "no indicator of a failed attack", check prints them under its flags, not as one."""
    summary, info = alike_but_recipes()
    models = judge_summary(summary, info)
    judged = Soundness(JudgedRun(StoredRun("r", info, {"protocol": "standard"}, pd.DataFrame(), summary), [], models))
    assert not judged.flags and {(f.model, f.check) for f in judged.caveats} == {
        (m, c) for m in ("digits-deit", ELLIPTICAL) for c in ("one-checkpoint", "recipe")
    }
    document = judged.render("checklist")
    claims = document.split("\n| claim | covers | status | evidence |\n")[1].split("\n\n")[0]
    assert "| Compared models share a training recipe | " in claims and "| CAVEAT | recipes differ (" in claims
    assert " | RAISED | " not in document and "RAISED" not in "".join(verdicts(document))
    indicators = [c for c in CHECKS.values() if not c.claim]
    assert verdicts(document) == verdicts(judged.render("html")) == [
        f"no indicator of a failed attack among the {len(indicators) - one.not_run} checked ({one.not_run} not run); "
        "CAVEAT: one checkpoint, recipes differ"
        for one in models
    ]
    printed = str(judged).splitlines()
    assert printed[1] == "Soundness checks: no flags (robeval check RUN --report FILE: every check with its evidence)"
    assert printed[2] == "Caveats on the claim (no sign of a failed attack): 3" and not flag_lines(str(judged))
    assert printed[3].startswith("  [one-checkpoint] digits-deit, digits-deit-elliptical: one checkpoint: ")
    assert printed[4].startswith("  [recipe] digits-deit: recipes differ (this model's vs the other's): ")
    assert "status-CAVEAT" in judged.render("html") and "CAVEAT (a limit on what the numbers can claim" in CHECKLIST_INTRO
    assert "RAISED (not shown: a sign the attacks may have failed)" in CHECKLIST_INTRO


def test_the_fast_protocols_bound_is_a_caveat_when_wider_than_two_points():
    """The fast protocol's bound on AutoAttack: ok within 2 points of its worst case, a caveat beyond (naming the
    examples that would narrow it), ok where everything escalated (no bound needed), n/a for any other protocol."""

    def found(bound: float | None, protocol: str = "fast") -> Finding:
        row = dict(model="digits-deit", attack="any", eps="8/255", eps_value=8 / 255, top1=50.0, n=100, protocol=protocol)
        audit = {"audit": Phrases(["audited"]), "aa_bound": float("nan") if bound is None else bound}
        (one,) = judge_summary(pd.DataFrame([{**row, **(audit if protocol == "fast" else {})}]), {})
        return next(f for f in one.findings if f.check == "wide-bound")

    wide = found(40.0)
    assert (wide.status, wide.gist) == ("CAVEAT", "wide bound") and "10.0 points below, wider than 2" in wide.evidence
    assert re.search(r"about [0-9,]+ examples at eps 8/255 would bring it within 2 points", wide.advice)
    assert found(48.5).status == "ok" and "within 2 points" in found(48.5).evidence
    assert found(None).status == "ok" and "the result is AutoAttack's" in found(None).evidence
    assert found(None, "standard").status == "n/a"


def test_advice_fits_the_run_and_one_example_never_raises():
    """A digits run is told to transfer from a digits model (8x8, one channel, 10 classes), never from a
    224-px ImageNet one; a curve that lost one example of 100 at 100% has not failed to converge."""
    summary = pd.DataFrame([dict(model="digits-deit", attack="pgd", eps="8/255", eps_value=8 / 255, top1=100.0, n=100,
                                 curve_robust_90=100, curve_robust_end=99, curve_examples=100, settings="{}")])  # fmt: skip
    facts = {"models": {"digits-deit": {"input_size": [1, 8, 8], "num_classes": 10}}}
    (one,) = judge_summary(summary, facts)
    found = {f.check: f for f in one.findings}
    assert "--source-model digits-" in found["transfer-beats-white-box"].evidence
    assert found["not-converged"].status == "ok" and "standard error 0.00" not in found["not-converged"].evidence
    (unknown,) = judge_summary(summary, {"models": {"digits-deit": {"input_size": [3, 17, 17], "num_classes": 7}}})
    transfer = next(f for f in unknown.findings if f.check == "transfer-beats-white-box")
    assert "--source-model PATH.py:CALLABLE" in transfer.evidence


def test_an_adaptive_runs_copy_is_not_judged_and_its_model_gets_the_adaptive_advice():
    """An --adaptive run stores its models' facts under the registered name only: the +adaptive copy is the
    adaptive evaluation itself (no transfer or black-box verdict), while the model is told of a digits source
    and, its weight being data-dependent, of --adaptive."""
    rows = [dict(model=m, attack=a, eps="8/255", eps_value=8 / 255, top1=v, n=100) for m in (ELLIPTICAL, f"{ELLIPTICAL}+adaptive")
            for a, v in (("clean", 95.0), ("pgd", 60.0), ("square", 20.0))]  # fmt: skip
    facts = {"models": {ELLIPTICAL: {"input_size": [1, 8, 8], "num_classes": 10}}}
    model, copy = judge_summary(pd.DataFrame(rows), facts)
    found, copied = ({f.check: f for f in one.findings} for one in (model, copy))
    assert "--source-model digits-" in found["transfer-beats-white-box"].evidence
    assert found["gradient-masking"].status == "RAISED" and "--adaptive" in found["gradient-masking"].advice
    for check in ("transfer-beats-white-box", "gradient-masking", "adaptive-gap"):
        assert copied[check].status == "n/a", (check, copied[check])


def test_check_report_lists_every_indicator_with_a_verdict_and_check_prints_its_raised_ones(tmp_path):
    store = str(tmp_path / "s.sqlite")
    proc = run_cli("run", "-m", "digits-deit", "-m", ELLIPTICAL, "--adaptive", "--attacks",
                   "fgsm,pgd,square,transfer-pgd", "--source-model", "digits-deit", "-n", "20", "--eps", "8/255,64/255",
                   "--set", "square.n_queries=100", "--set", "pgd.steps=5", "--set", "transfer-pgd.steps=5",
                   "--quiet", "--store", store)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    checked = run_cli("check", "--store", store, "--report", str(tmp_path / "report.md"))
    assert checked.returncode == 0, checked.stderr
    text = (tmp_path / "report.md").read_text()
    for model in ("digits-deit", ELLIPTICAL):
        section = text.split(f"## {model}\n")[1].split("\n## ")[0]
        assert all(f"| {c.title} |" in section for c in CHECKS.values()) and f"**Verdict for {model}:" in section
    assert "Accuracy reaches 0 at a large eps | Carlini" in text and "| ok | lowest fixed-eps white-box top-1 at eps >= 64/255: 0.00%" in text
    assert "n/a | no data-dependent attention weight" in text.split(f"## {ELLIPTICAL}")[0]
    assert raised_rows(text) == flag_lines(checked.stdout)


def verdicts(text: str) -> list[str]:
    """The verdict lines of a checklist, Markdown or HTML ("no indicator ... among the N checked ...")."""
    return re.findall(r"Verdict(?: for [^:]+)?: (.*?)\.(?:\*\*|</strong>)", text)


def test_the_checklist_and_the_report_judge_a_run_with_its_evidence_runs_alike(tmp_path):
    """``check --report --run-missing`` makes PGD at large eps as a run of its own; the checklist, the
    flags and the HTML report of the run all read it (the report once counted 9 checked where the
    checklist counted 11)."""
    store = str(tmp_path / "s.sqlite")
    assert run_cli("run", "-m", "digits-deit", "--attacks", "fgsm,pgd", "-n", "10", "--eps", "8/255", "--quiet",
                   "--set", "pgd.steps=5", "--store", store).returncode == 0  # fmt: skip
    checked = run_cli("check", "--store", store, "--report", str(tmp_path / "c.md"), "--run-missing")
    assert checked.returncode == 0, checked.stderr
    page = run_cli("report", "--store", store, "--out", str(tmp_path / "r.html"), "--gallery-size", "0")
    assert page.returncode == 0, page.stderr
    checklist = (tmp_path / "c.md").read_text()
    html = (tmp_path / "r.html").read_text().split('<section id="checklist"')[1].split("</section>")[0]
    assert verdicts(checklist) == verdicts(html) and len(verdicts(checklist)) == 1
    assert "| Accuracy reaches 0 at a large eps |" in checklist and "| not run | no white-box attack at eps" not in checklist
    assert html.count("<h3>") == 1 and "Large-eps evidence from run" in html  # the evidence run is no run of its own
    assert raised_rows(checklist) == flag_lines(checked.stdout)


def test_check_run_missing_with_a_report_it_cannot_write_runs_nothing(tmp_path):
    """``check --report FOLDER --run-missing`` is refused before the evidence run: no minutes spent, and the
    store holds the runs it held."""
    store = str(tmp_path / "s.sqlite")
    assert run_cli("run", "-m", "digits-deit", "--attacks", "fgsm", "-n", "4", "--eps", "8/255", "--quiet",
                   "--store", store).returncode == 0  # fmt: skip
    refused = run_cli("check", "--store", store, "--report", str(tmp_path), "--run-missing")
    assert refused.returncode == 2 and "is a folder; give a file name" in refused.stderr, refused.stderr
    with existing_store(store) as db:
        assert len(db.runs()) == 1


def test_check_report_compares_restarts_with_a_run_of_the_other_protocol(tmp_path):
    from robeval.results.runs import resolve_runs, restart_companion
    from robeval.store import Store

    store = Store(tmp_path / "s.sqlite")
    common = dict(models="digits-deit", attacks="apgd-ce", eps="8/255", n_examples=20, store=store,
                  settings={"apgd-ce": {"n_iter": 5}})  # fmt: skip
    standard = evaluate_full(protocol="standard", **common)
    plus = evaluate_full(protocol="aa-plus", **common)
    run = resolve_runs(store, [plus.run_id])[0]
    companion = restart_companion(store, run)
    assert set(companion["run_id"]) == {standard.run_id}

    def restarts_row(companion: pd.DataFrame | None) -> str:
        document = Soundness(JudgedRun(run, [], judge_summary(run.summary, companion=companion))).render("checklist")
        return document.split("| Restarts do not change the result |")[1]

    row = restarts_row(companion)
    one, five = (r.summary.set_index("attack").loc["apgd-ce", "top1"] for r in (standard, plus))
    assert f"eps 8/255: apgd-ce {one:.2f} with 1 restart, {five:.2f} with 5" in row.splitlines()[0]
    assert row.split("|")[1].strip() in ("ok", "RAISED")
    assert "| not run | the reported numbers include 5 restarts" in restarts_row(None)

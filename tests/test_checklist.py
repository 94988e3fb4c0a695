"""The evaluation checklist (robeval check --report): every indicator with its verdict, restarts compared with the other protocol."""

from __future__ import annotations

from robeval.api import evaluate_full


def test_check_report_lists_every_indicator_with_a_verdict(tmp_path):
    from robeval.report.checklist import INDICATORS

    from .conftest import run_cli

    store = str(tmp_path / "s.sqlite")
    proc = run_cli("run", "-m", "digits-deit", "-m", "digits-deit-elliptical", "--adaptive", "--attacks",
                   "fgsm,pgd,square,transfer-pgd", "--source-model", "digits-deit", "-n", "20", "--eps", "8/255,64/255",
                   "--set", "square.n_queries=100", "--set", "pgd.steps=5", "--set", "transfer-pgd.steps=5",
                   "--quiet", "--store", store)
    assert proc.returncode == 0, proc.stderr
    checked = run_cli("check", "--store", store, "--report", str(tmp_path / "report.md"))
    assert checked.returncode == 0, checked.stderr
    text = (tmp_path / "report.md").read_text()
    for model in ("digits-deit", "digits-deit-elliptical"):
        section = text.split(f"## {model}\n")[1].split("\n## ")[0]
        assert all(f"| {ind.name} |" in section for ind in INDICATORS) and f"**Verdict for {model}:" in section
    assert "Accuracy reaches 0 at a large eps | Carlini" in text and "| ok | lowest fixed-eps white-box top-1 at eps >= 64/255: 0.00%" in text
    assert "n/a | no data-dependent attention weight" in text.split("## digits-deit-elliptical")[0]


def test_check_report_compares_restarts_with_a_run_of_the_other_protocol(tmp_path):
    from robeval.report.checklist import checklist
    from robeval.results.runs import resolve_runs, restart_companion
    from robeval.results.store import Store

    store = Store(tmp_path / "s.sqlite")
    common = dict(models="digits-deit", attacks="apgd-ce", eps="8/255", n_examples=20, store=store,
                  settings={"apgd-ce": {"n_iter": 5}})
    standard = evaluate_full(protocol="standard", **common)
    plus = evaluate_full(protocol="aa-plus", **common)
    run = resolve_runs(store, [plus.run_id])[0]
    companion = restart_companion(store, run)
    assert set(companion["run_id"]) == {standard.run_id}
    row = checklist(run.summary, {}, run.run_id, "aa-plus", companion=companion).split("| Restarts do not change the result |")[1]
    one, five = (r.summary.set_index("attack").loc["apgd-ce", "top1"] for r in (standard, plus))
    assert f"eps 8/255: apgd-ce {one:.2f} with 1 restart, {five:.2f} with 5" in row.splitlines()[0]
    assert row.split("|")[1].strip() in ("ok", "RAISED")
    alone = checklist(run.summary, {}, run.run_id, "aa-plus").split("| Restarts do not change the result |")[1]
    assert "| not run | the reported numbers include 5 restarts" in alone

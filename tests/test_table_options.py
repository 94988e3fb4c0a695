"""Tables a paper can take: ``robeval table --top1-only --attacks ... --name MODEL=NAME`` (and the same
keywords of ``Run.table``) in Markdown, LaTeX and CSV; the best of each column in bold where the claim test
separates it, else marked (robeval.report.bests; tests/test_bests.py); cells of a model with several
members as mean ± std."""

from __future__ import annotations

import io

import pandas as pd
import pytest

import robeval
from robeval.report.paper import TableOptions, render

from .conftest import one_line_error, run_cli

SUITE = ["clean", "fgsm", "pgd", "spsa", "apgd-ce", "apgd-t", "fab-t", "square", "any"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A run of the two demo models under FGSM and PGD on 8 digits."""
    path = tmp_path_factory.mktemp("table") / "s.sqlite"
    done = run_cli("run", "-n", "8", "--attacks", "fgsm,pgd", "--store", str(path), "-q")
    assert done.returncode == 0, done.stderr
    return path


def rows_of(markdown: str) -> tuple[list[str], dict[str, list[str]]]:
    """The header's column names and each row's cells (bold marks kept)."""
    lines = [[c.strip() for c in line.strip().strip("|").split("|")] for line in markdown.splitlines() if line.startswith("| ")]
    return lines[0], {cells[0]: cells[1:] for cells in lines[1:]}


def test_top1_only_chosen_attacks_and_display_names_in_markdown(store):
    shown = run_cli("table", "--store", str(store), "--top1-only", "--attacks", "pgd,any,clean",
                    "--name", "digits-deit=DeiT", "--name", "digits-deit-elliptical=Elliptical (ours)")  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    header, rows = rows_of(shown.stdout)
    assert header == ["Model", "PGD", "Any (worst case)", "Clean"] and list(rows) == ["DeiT", "Elliptical (ours)"]
    assert "Table: Top-1 accuracy (%) under attack" in shown.stdout and "top-5" not in shown.stdout.split("\n")[0]
    summary = robeval.open_run(store=store).summary.set_index(["model", "attack"])
    for model, cells in zip(["digits-deit", "digits-deit-elliptical"], rows.values()):
        assert [float(c.strip("*†")) for c in cells] == [summary.loc[(model, a), "top1"] for a in ("pgd", "any", "clean")]
    for column in range(3):  # the best of each column marked (bold or †), ties both, no other cell
        values = [float(cells[column].strip("*†")) for cells in rows.values()]
        marked = [cells[column].startswith("**") or cells[column].endswith("†") for cells in rows.values()]
        assert marked == [v == max(values) for v in values]


def test_the_cli_is_run_table_and_latex_and_csv_take_the_same_options(store):
    run = robeval.open_run(store=store)
    names = {"digits-deit": "DeiT", "digits-deit-elliptical": "Elliptical_1"}
    latex = run.table("latex", top1_only=True, attacks=["any", "pgd"], names=names)
    cli = run_cli("table", "-f", "latex", "--store", str(store), "--top1-only", "--attacks", "any,pgd",
                  "--name", "digits-deit=DeiT", "--name", "digits-deit-elliptical=Elliptical_1")  # fmt: skip
    assert cli.stdout == latex + "\n" or cli.stdout == latex
    assert r"\begin{tabular}{lrr}" in latex and r"Model & Any (worst case) & PGD \\" in latex
    assert r"Elliptical\_1 &" in latex and "digits-deit" not in latex.split(r"\begin{tabular}")[1]
    csv = pd.read_csv(io.StringIO(run.table("csv", top1_only=True, attacks="any,pgd", names=names)))
    assert "top5" not in csv.columns and list(csv["model"].unique()) == ["DeiT", "Elliptical_1"]
    assert list(csv["attack"]) == ["any", "pgd", "any", "pgd"]
    default = pd.read_csv(io.StringIO(run.table("csv")))
    assert {"top1", "top5"} <= set(default.columns) and set(default["attack"]) == {"clean", "fgsm", "pgd", "any"}


@pytest.mark.parametrize(
    "args, words",
    [
        (["--attacks", "pgd,square"], ["--attacks square", "not one of the run's attack columns", "pgd"]),
        (["--attacks", "pgd,,any"], ["--attacks", "each attack column once"]),
        (["--attacks", "pgd,pgd"], ["--attacks", "each attack column once"]),
        (["--name", "digits-deit-diff=DiffAttn"], ["--name digits-deit-diff", "not one of the run's models"]),
        (["--name", "digits-deit"], ["--name 'digits-deit'", "MODEL=NAME"]),
        (["--name", "digits-deit="], ["--name digits-deit=", "give the name"]),
        (["--name", "digits-deit=A", "--name", "digits-deit=B"], ["--name digits-deit is given twice"]),
        (["--name", "digits-deit=digits-deit-elliptical"], ["two models would be shown as 'digits-deit-elliptical'"]),
        (["-f", "robustbench", "--top1-only"], ["-f robustbench has a fixed layout"]),
    ],
)
def test_table_options_that_do_not_fit_the_run_are_one_line(store, tmp_path, args, words):
    out = tmp_path / "t.md"
    run_id = robeval.open_run(store=store).run_id  # named: no note on which run was taken
    result = run_cli("table", run_id, "--store", str(store), "--out", str(out), *args)
    assert one_line_error(result, *words), result.stderr
    assert not out.exists()


def members_summary() -> pd.DataFrame:
    """A hand-made summary as a run of models with several members gives it: per model and attack the
    mean over members, their sample std (``<metric>_std``) and how many there are (``members``); the
    third model has one member (no std)."""
    rows = []
    for model, members, base in (("digits-deit", 3, 97.8), ("digits-deit-diff", 5, 97.8), ("digits-deit-one", 1, 90.0)):
        for i, attack in enumerate(SUITE):
            top1 = base - 7 * i if attack != "any" else base - 60
            std = float("nan") if members == 1 else 0.4 + 0.1 * i
            rows.append(dict(model=model, attack=attack, eps="8/255", eps_value=8 / 255, norm="Linf", n=100, top1=top1,
                             top5=min(100.0, top1 + 10), top1_std=std, top5_std=std / 2, members=members,
                             protocol="standard", data="digits"))  # fmt: skip
    return pd.DataFrame(rows)


def test_cells_of_several_members_are_mean_and_std_in_every_format():
    summary = members_summary()
    summary["best_top1"] = ["separated" if m == "digits-deit" else "" for m in summary["model"]]  # as bests marks them
    summary.loc[(summary["model"] == "digits-deit-diff") & (summary["attack"] == "clean"), "best_top1"] = "not separated"
    header, rows = rows_of(render(summary, "md"))
    assert len(header) == 19  # the complaint: 1 + 9 columns x top-1 and top-5
    assert rows["digits-deit"][0] == "**97.80 ± 0.40**" and rows["digits-deit-diff"][0] == "97.80 ± 0.40†"
    assert rows["digits-deit-one"][0] == "90.00"  # one member: as a model prints today
    assert not any("**" in c or "†" in c for c in rows_of(render(summary, "md", TableOptions.of(bold=False)))[1]["digits-deit"])
    md = render(summary, "md", TableOptions.of(top1_only=True, attacks="pgd,apgd-ce,any"))
    assert "cells: mean ± sample std over each model's members" in md and "digits-deit-diff: 5" in md
    header, rows = rows_of(md)
    assert header == ["Model", "PGD", "APGD-CE", "Any (worst case)"]
    assert rows["digits-deit"] == ["**83.80 ± 0.60**", "**69.80 ± 0.80**", "**37.80 ± 1.20**"]
    latex = render(summary, "latex", TableOptions.of(top1_only=True, attacks="pgd,apgd-ce,any"))
    assert r"\begin{tabular}{lrrr}" in latex  # fits a column of a two-column paper
    line = next(row for row in latex.splitlines() if row.startswith("digits-deit &"))
    assert line == r"digits-deit & $\mathbf{83.80 \pm 0.60}$ & $\mathbf{69.80 \pm 0.80}$ & $\mathbf{37.80 \pm 1.20}$ \\"
    assert r"digits-deit-one & 76.00 & 62.00 & 30.00 \\" in latex and r"mean $\pm$ sample std" in latex
    csv = pd.read_csv(io.StringIO(render(summary, "csv", TableOptions.of(top1_only=True))))
    assert {"top1_std", "members"} <= set(csv.columns) and not {"top5", "top5_std"} & set(csv.columns)

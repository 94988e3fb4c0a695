"""``robeval reproduce``: every registered paper table runs on the embedded digits demo, in its layout."""

from __future__ import annotations

import pandas as pd
import pytest

from robeval.api import reproduce
from robeval.core.errors import UserError
from robeval.models import count_parameters
from robeval.report.naming import attack_title
from robeval.reproduce import TABLES as PAPER_TABLES
from robeval.reproduce import list_tables
from robeval.store import Store

from .conftest import FAST_SETTINGS, run_cli

TABLES = [t.name for t in list_tables()]
ONE_CHECKPOINT_TABLES = [t.name for t in list_tables() if t.members == 1]
MEMBER_TABLES = [t.name for t in list_tables() if t.members > 1]  # mean ± std over several checkpoints per model


def digits_options(table, tmp_path) -> dict:
    """The cheapest digits run of ``table`` (4 examples, short attacks; the shift table at severity 1)."""
    if table.runner == "profile":
        return dict(repeats=2, memory=False)
    options = dict(n_examples=4, store=str(tmp_path / "s.sqlite"), settings=FAST_SETTINGS)
    if table.kind == "shift":
        options = dict(options, severities="1", settings={})
    return options


def values_of(grid: pd.DataFrame) -> pd.DataFrame:
    """The grid's numbers (a change "(+x%)" and thousands commas dropped; n/a as NaN)."""
    return grid.map(lambda v: float("nan") if v == "n/a" else float(str(v).split(" (")[0].replace(",", "")))


def check_single_run_layout(table, rep, labels) -> None:
    titles = ["Clean", *(attack_title(a) for a in table.attacks)]
    if table.layout == "attacks-as-rows":  # rows = Clean and the attacks; columns = each row label's Top-1 / Top-5
        assert list(rep.grid.index) == titles
        assert list(rep.grid.columns) == [(label, k) for label in labels for k in ("Top-1", "Top-5")]
    elif table.layout == "models-as-rows":  # rows = the models; columns = Clean and each attack's Top-1 / Top-5
        assert list(rep.grid.index) == labels
        assert list(rep.grid.columns) == [(t, k) for t in titles for k in ("Top-1", "Top-5")]
    else:  # accuracy per parameter
        assert list(rep.grid.index) == labels and "Params (M)" in rep.grid.columns


def check_profile_layout(table, rep, labels) -> None:
    """Rows = the paper's rows; the efficiency columns (changes against the row named), or one latency
    column per model family; every figure positive, rows of one model alike."""
    assert list(rep.grid.index) == labels
    if table.layout == "efficiency":
        assert list(rep.grid.columns) == ["Speed (it/s)", "Max memory (MB)", "FLOPs/sample (G)", "Params (M)"]
        assert all(("%)" in rep.grid.loc[r.label, "Speed (it/s)"]) == bool(r.against) for r in table.rows)
        assert "it/s): iterations per second, one iteration = a forward and a backward pass" in rep.text
    else:
        assert list(rep.grid.columns) == [c.title for c in table.digits_columns]
        assert "inference time per image (ms)" in rep.text and "batch size 1" in rep.text
    values = values_of(rep.grid).drop(columns=["Max memory (MB)"], errors="ignore")
    assert (values > 0).all().all()
    if table.layout == "efficiency":  # on digits the sizes' rows repeat their model's figures
        assert (values.groupby([r.digits for r in table.rows]).nunique() <= 1).all().all()


def check_column_runs_layout(table, rep, labels, runs) -> None:
    """Rows = the paper's rows, columns = the digits version's; n/a columns n/a throughout, the rest
    percentages; one finished stored run per column that runs."""
    assert list(rep.grid.index) == labels
    assert list(rep.grid.columns) == [c.title for c in table.digits_columns]
    values = values_of(rep.grid)
    for column in table.digits_columns:
        cells = values[column.title]
        assert cells.isna().all() if not column.runs else ((cells >= 0) & (cells <= 100)).all()
    assert set(rep.results) == {c.key for c in table.digits_columns if c.runs}
    assert sorted(runs["id"]) == sorted(r.run_id for r in rep.results.values())



def assert_tables_are_well_formed(md: str) -> None:
    """Every Markdown table's rule has one cell per head cell (a table whose rule is short is not a table)."""
    lines = md.splitlines()
    rules = [i for i, line in enumerate(lines) if line.startswith("|---")]
    assert rules
    for i in rules:
        assert lines[i].count("|") == lines[i - 1].count("|"), (lines[i - 1], lines[i])

@pytest.mark.parametrize("name", ONE_CHECKPOINT_TABLES)
def test_every_table_reproduces_on_digits_in_its_layout(name, tmp_path, monkeypatch):
    from robeval.evaluation import profiling

    monkeypatch.setattr(profiling, "MIN_TIMED_SECONDS", 0.01)  # the layout is tested here, not the timing
    table = PAPER_TABLES.require(name)
    rep = reproduce(name, data="digits", out=tmp_path / "o" / "{run_id}", **digits_options(table, tmp_path))
    assert set(rep.files) == {"md", "csv", "tex"} and all(p.exists() for p in rep.files.values())
    labels = [r.label for r in table.rows]
    md = rep.files["md"].read_text()
    assert table.title in md and table.source in md and "digits" in md
    assert_tables_are_well_formed(md)
    if table.runner == "run":
        check_single_run_layout(table, rep, labels)
    elif table.runner == "profile":
        check_profile_layout(table, rep, labels)
    if table.kind == "attacks":
        values = rep.grid.map(float)
        assert ((values >= 0) & (values <= 100)).all().all()
        assert f"protocol: {table.protocol}" in md and "--protocol standard gives the valid threat model" in md
    if table.runner != "profile":
        runs = Store(tmp_path / "s.sqlite").runs()
        assert set(runs["status"]) == {"finished"}  # stored like any run
        csv = pd.read_csv(rep.files["csv"], index_col=0)
        assert list(csv.index) == list(rep.grid.index)
        if table.runner == "column-runs":
            check_column_runs_layout(table, rep, labels, runs)
        else:
            assert len(runs) == 1
    if table.kind == "accuracy":  # accuracy per parameter: 1 for the reference row, from the run's top-1 and the counts
        top1 = rep.grid["Top-1 (%)"].map(float)
        params = pd.Series([count_parameters(m) for m in table.models(digits=True)], index=top1.index)
        ratio = (top1 / top1.iloc[0]) / (params / params.iloc[0])
        assert rep.grid["Accuracy/param"].map(float).tolist() == pytest.approx(ratio.tolist(), abs=2e-3)
        assert rep.grid["Accuracy/param"].iloc[0] == "1.000" and "Top-1 clean accuracy" in md and "top-5" not in md.split("\n")[0]
    assert r"\begin{tabular}" in rep.files["tex"].read_text()


def test_standard_protocol_checkpoints_by_row_label_and_unknown_tables(tmp_path):
    from robeval.zoo import zoo_path

    path = str(zoo_path("digits-deit-elliptical"))
    rep = reproduce("elliptical-tiny-attacks", data="digits", protocol="standard", checkpoints={"DeiT-Elliptical": path},
                    n_examples=4, settings=FAST_SETTINGS, store=str(tmp_path / "s.sqlite"), out=tmp_path / "o")
    assert "protocol: standard" in rep.text and "not a pixel-space threat model" not in rep.text
    assert rep.result.info["models"]["digits-deit-elliptical"]["checkpoint"] == path
    with pytest.raises(UserError, match="unknown paper table 'elliptical-table'.*did you mean"):
        PAPER_TABLES.require("elliptical-table")


@pytest.fixture()
def toy_table():
    """A registered two-row table under FGSM and PGD: the command is tested on a table that costs
    seconds (every real table runs above, through the API with cheap settings)."""
    from robeval.reproduce.tables import TABLES as REGISTRY
    from robeval.reproduce.tables import PaperTable, Row, register_table

    rows = (Row("DeiT", "deit-tiny", "digits-deit"), Row("DeiT-Elliptical", "deit-tiny-elliptical", "digits-deit-elliptical"))
    register_table(PaperTable("toy-table", "A toy table", "tests", "attacks", rows, attacks=("fgsm", "pgd")))
    yield "toy-table"
    REGISTRY.remove("toy-table")


def test_reproduce_cli_lists_and_runs(tmp_path, toy_table):
    listing = run_cli("reproduce", "--list")
    assert listing.returncode == 0 and all(name in listing.stdout for name in [*TABLES, toy_table])
    proc = run_cli("reproduce", toy_table, "-n", "4", "--quiet", "--store", str(tmp_path / "s.sqlite"),
                   "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert "| Clean |" in proc.stdout and (tmp_path / "o" / "table.tex").exists()
    table = run_cli("table", "--store", str(tmp_path / "s.sqlite"))  # the run is an ordinary stored run
    assert table.returncode == 0 and "digits-deit-elliptical" in table.stdout
    bad = run_cli("reproduce", "elliptical-efficiency", "--checkpoint", "DeiT=x.pth")
    assert bad.returncode == 2 and "--checkpoint does not apply" in bad.stderr


def test_the_seed_spread_tables_are_registered_with_their_layout_and_ask_for_several_checkpoints(tmp_path):
    """Hosseini & Hosseini's rebuttal tables (top-1 mean ± std over 5 training runs per attention kind, MNIST
    and CIFAR-100): rows = the four kinds, one column per data set, the digits version one column of the
    digits DeiTs; reproducing one without several checkpoints for each model is one line saying so."""
    assert {"hosseini-std-mnist", "hosseini-std-cifar100"} <= set(MEMBER_TABLES)
    listing = run_cli("reproduce", "--list")
    for name in MEMBER_TABLES:
        table = PAPER_TABLES.require(name)
        assert [r.label for r in table.rows] == ["Standard", "Optimised", "Efficient", "Super"]
        assert len(table.columns) == 1 and table.columns[0].published == name.rsplit("-", 1)[1]
        assert table.column_models(table.digits_columns[0], digits=True) == [
            "digits-deit", "digits-deit-optimised", "digits-deit-efficient", "digits-deit-super"]  # fmt: skip
        assert "mean ± std" in table.title and all("mean ± sample std" in c.note for c in table.table_columns(True))
        assert name in listing.stdout
        with pytest.raises(UserError, match="needs several checkpoints for each model"):
            reproduce(name, data="digits", out=tmp_path / "o", store=str(tmp_path / "s.sqlite"))
        refused = run_cli("reproduce", name, "--store", str(tmp_path / "s.sqlite"), "--out", str(tmp_path / "o"))
        assert refused.returncode == 2 and "needs several checkpoints for each model" in refused.stderr
        assert "digits-deit has 0; give --checkpoint digits-deit=A,B,C" in refused.stderr
    assert "mean ± std over 5" in listing.stdout  # what --list says they run
    assert not (tmp_path / "o").exists() and not (tmp_path / "s.sqlite").exists()


def test_a_column_of_models_with_several_members_shows_mean_and_std():
    from robeval.report.document import to_latex, to_markdown
    from robeval.reproduce.column_runs import runs_grid
    from robeval.reproduce.render import document

    table = PAPER_TABLES.require("hosseini-std-mnist")
    models = table.column_models(table.digits_columns[0], digits=True)
    summary = pd.DataFrame([dict(model=m, attack="clean", eps="8/255", top1=97.8 - i, top1_std=0.4 + i / 10, members=5)
                            for i, m in enumerate(models)])  # fmt: skip
    grid, notes = runs_grid(table, {"digits": summary}, digits=True)
    assert [str(c) for c in grid.iloc[:, 0]] == ["97.80 ± 0.40", "96.80 ± 0.50", "95.80 ± 0.60", "94.80 ± 0.70"]
    assert "| Standard | 97.80 ± 0.40 |" in to_markdown(document(grid, ["caption"])) and notes == []
    assert r"Super & $94.80 \pm 0.70$ \\" in to_latex(document(grid, ["caption"]))

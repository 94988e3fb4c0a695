"""``robeval reproduce``: every registered paper table runs on the embedded digits demo, in its layout."""

from __future__ import annotations

import pandas as pd
import pytest

from robeval.errors import UserError
from robeval.reproduce import get_table, list_tables, reproduce
from robeval.store import Store

from .conftest import FAST_SETTINGS, run_cli

TABLES = [t.name for t in list_tables()]


@pytest.mark.parametrize("name", TABLES)
def test_every_table_reproduces_on_digits_in_its_layout(name, tmp_path):
    table = get_table(name)
    options = dict(repeats=2) if table.kind == "efficiency" else dict(n_examples=4, store=str(tmp_path / "s.sqlite"), settings=FAST_SETTINGS)
    rep = reproduce(name, data="digits", out=tmp_path / "o", **options)
    assert set(rep.files) == {"md", "csv", "tex"} and all(p.exists() for p in rep.files.values())
    labels = [r.label for r in table.rows]
    md = rep.files["md"].read_text()
    assert table.title in md and table.source in md and "digits" in md
    if table.kind == "attacks":
        # rows = Clean and the paper's attacks; columns = each row label's Top-1 / Top-5
        assert list(rep.grid.index) == ["Clean", "FGSM", "PGD", "SPSA", "APGD-CE", "APGD-T", "FAB-T", "Square"]
        assert [c for c in rep.grid.columns] == [(label, k) for label in labels for k in ("Top-1", "Top-5")]
        values = rep.grid.map(float)
        assert ((values >= 0) & (values <= 100)).all().all()
        assert f"protocol: {table.protocol}" in md and "--protocol standard gives the valid threat model" in md
        runs = Store(tmp_path / "s.sqlite").runs()
        assert list(runs["status"]) == ["finished"]  # stored like any run
        csv = pd.read_csv(rep.files["csv"], index_col=0)
        assert list(csv.index) == list(rep.grid.index)
    else:
        assert list(rep.grid.index) == labels and "Params (M)" in rep.grid.columns
    assert r"\begin{tabular}" in rep.files["tex"].read_text()


def test_standard_protocol_checkpoints_by_row_label_and_unknown_tables(tmp_path):
    from robeval.zoo import zoo_path

    path = str(zoo_path("digits-deit-elliptical"))
    rep = reproduce("elliptical-tiny-attacks", data="digits", protocol="standard", checkpoints={"DeiT-Elliptical": path},
                    n_examples=4, settings=FAST_SETTINGS, store=str(tmp_path / "s.sqlite"), out=tmp_path / "o")
    assert "protocol: standard" in rep.text and "not a pixel-space threat model" not in rep.text
    assert rep.result.run["models"]["digits-deit-elliptical"]["checkpoint"] == path
    with pytest.raises(UserError, match="unknown paper table 'elliptical-table'.*did you mean"):
        get_table("elliptical-table")


def test_reproduce_cli_lists_and_runs(tmp_path):
    listing = run_cli("reproduce", "--list")
    assert listing.returncode == 0 and all(name in listing.stdout for name in TABLES)
    proc = run_cli("reproduce", "elliptical-table-e", "-n", "4", "--quiet", "--store", str(tmp_path / "s.sqlite"),
                   "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert "| Clean |" in proc.stdout and (tmp_path / "o" / "table.tex").exists()
    table = run_cli("table", "--store", str(tmp_path / "s.sqlite"))  # the run is an ordinary stored run
    assert table.returncode == 0 and "digits-deit-elliptical" in table.stdout
    bad = run_cli("reproduce", "elliptical-efficiency", "--checkpoint", "DeiT=x.pth")
    assert bad.returncode == 2 and "--checkpoint does not apply" in bad.stderr

"""Results store: resume after SIGKILL, concurrent writers, tables, paired comparison, plots."""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from contextlib import closing, contextmanager

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from robeval.core.errors import UserError
from robeval.report.comparison import compare
from robeval.results.statistics import bootstrap_ci, mcnemar_exact
from robeval.store import Store
from robeval.store.schema import SCHEMA_VERSION

from .conftest import run_cli, typeset
from .stop_point import held_model, held_ranks, start_held, wait_until

# Small but long enough to be killed part-way: 6 batches x 3 attacks.
RUN_OPTIONS = ["-n", "60", "--batch-size", "10", "--eps", "8/255", "--attacks", "fgsm,pgd,spsa", "--set",
               "spsa.iterations=10", "--set", "spsa.samples=32", "--quiet"]  # fmt: skip
RECORD_KEY = ["model", "eps", "attack", "example"]


def units_done(path) -> int:
    """The units another process has stored so far, read without creating the file (a plain connect would make an
    empty one that the writer then finds) and closed at once (``with connect()`` commits, it does not close)."""
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)) as conn:
            return conn.execute("SELECT COUNT(*) FROM units").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def only_run_records(path) -> pd.DataFrame:
    store = Store(path)
    runs = store.runs()
    assert len(runs) == 1
    return store.records(runs["id"].iloc[0]).sort_values(RECORD_KEY).reset_index(drop=True)


@pytest.fixture(scope="module")
def held(tmp_path_factory) -> str:
    """digits-deit as a model that holds still when the test that kills a run asks it to (tests/stop_point.py)."""
    return held_model(tmp_path_factory.mktemp("held"))


@pytest.fixture(scope="module")
def run_args(held) -> list[str]:
    return ["run", "-m", held, *RUN_OPTIONS]


@pytest.fixture(scope="module")
def reference_store(tmp_path_factory, run_args):
    path = tmp_path_factory.mktemp("ref") / "ref.sqlite"
    proc = run_cli(*run_args, "--store", str(path), "--out", str(path.parent / "out"))
    assert proc.returncode == 0, proc.stderr
    return path


def test_sigkill_then_resume_equals_uninterrupted(tmp_path, reference_store, run_args, held):
    path = tmp_path / "killed.sqlite"
    proc = start_held([*run_args, "--store", str(path), "--out", str(tmp_path / "o")], held, path, 5)
    wait_until(lambda: held_ranks(held, 1), proc)  # the run holds after 5 units, until it is killed
    assert proc.poll() is None, proc.communicate()[1]
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    partial = units_done(path)
    total = 6 * 4  # batches x (clean + 3 attacks)
    assert 0 < partial < total
    assert Store(path).runs()["status"].iloc[0] == "running"  # killed: never marked finished

    resumed = run_cli(*run_args, "--store", str(path), "--resume", "--out", str(tmp_path / "o"))
    assert resumed.returncode == 0, resumed.stderr
    assert units_done(path) == total
    pd.testing.assert_frame_equal(only_run_records(path), only_run_records(reference_store))
    ref_csv = pd.read_csv(reference_store.parent / "out" / "results.csv")
    new_csv = pd.read_csv(tmp_path / "o" / "results.csv")
    pd.testing.assert_frame_equal(ref_csv.drop(columns=["checkpoint", "run_id"]), new_csv.drop(columns=["checkpoint", "run_id"]))


def test_resume_with_changed_configuration_names_the_difference(tmp_path, reference_store, run_args):
    copy = tmp_path / "copy.sqlite"
    shutil.copy(reference_store, copy)
    run_id = Store(copy).runs()["id"].iloc[0]
    args = [a if a != "8/255" else "4/255" for a in run_args]
    proc = run_cli(*args, "--store", str(copy), "--resume", run_id)
    assert proc.returncode == 2 and "configuration differs" in proc.stderr and "eps: stored ['8/255'], now ['4/255']" in proc.stderr


def test_resume_alone_picks_the_newest_unfinished_run_with_these_options(tmp_path):
    from robeval.api import make_config
    from robeval.evaluation.plan import make_plan
    from robeval.evaluation.session import latest_matching_run

    def identity(eps):
        return make_plan(make_config(eps=eps)).identity()

    store = Store(tmp_path / "s.sqlite")
    with pytest.raises(UserError, match="no unfinished run in"):
        latest_matching_run(store, identity("8/255"))
    wanted = store.create_run(identity("8/255"), {}, "standard")
    store.create_run(identity("4/255"), {}, "standard")  # newer, other options
    assert latest_matching_run(store, identity("8/255")) == wanted
    store.update_run(wanted, status="finished")
    with pytest.raises(UserError, match=r"has this configuration \(the newest, .*, differs in eps: stored \['4/255'\], now \['8/255'\]\)"):
        latest_matching_run(store, identity("8/255"))


def test_two_runs_write_to_one_store_at_once(tmp_path):
    path = tmp_path / "shared.sqlite"
    args = ["run", "-n", "20", "--batch-size", "5", "--attacks", "fgsm,pgd", "--quiet", "--store", str(path)]
    other = subprocess.Popen([sys.executable, "-m", "robeval", *args, "-m", "digits-deit", "--out", str(tmp_path / "a")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while units_done(path) == 0 and other.poll() is None and time.time() < deadline:
        time.sleep(0.05)  # the other process is writing: this one starts beside it
    here = run_cli(*args, "-m", "digits-deit-elliptical", "--out", str(tmp_path / "b"))
    _, err = other.communicate(timeout=300)
    assert other.returncode == 0 and here.returncode == 0, err + here.stderr
    runs = Store(path).runs()
    assert list(runs["status"]) == ["finished", "finished"] and list(runs["done_units"]) == [12, 12]
    listing = run_cli("runs", "--store", str(path))
    assert listing.returncode == 0 and listing.stdout.count("finished") == 2 and "12/12" in listing.stdout


def test_schema_is_versioned(tmp_path):
    path = tmp_path / "s.sqlite"
    Store(path).close()
    with sqlite3.connect(str(path)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(UserError, match="newer than this robeval"):
        Store(path)


@contextmanager
def old_store(path, version: int):
    """A store of schema ``version`` with one run ``r`` and one record of model ``m`` (PGD at 8/255)."""
    from robeval.store.schema import MIGRATIONS

    with sqlite3.connect(path) as conn:
        for step in range(version):
            conn.executescript(MIGRATIONS[step] + ";")
        conn.execute(f"PRAGMA user_version = {version}")
        conn.execute("INSERT INTO runs (id, created, status, protocol, config, info) VALUES ('r', 'now', 'finished', "
                     "'standard', '{}', '{}')")
        conn.execute("INSERT INTO records VALUES ('r', 'm', 'pgd', '8/255', 0.03, 0, 1, 3, 1, 1, 0, 1, 5, 0.03, 0.5, "
                     "21, 20, NULL, NULL)")
        yield conn


def test_a_store_of_schema_5_lets_norms_be_missing_and_keeps_its_records(tmp_path):
    path = tmp_path / "old.sqlite"
    with old_store(path, 5) as conn, pytest.raises(sqlite3.IntegrityError):  # schema 5: a NaN norm (NULL) is refused
        conn.execute("INSERT INTO records VALUES ('r', 'm', 'fog@1', '8/255', 0.03, 0, 2, 3, 1, 1, 0, 1, 5, "
                     "NULL, NULL, 1, 0, NULL, NULL)")
    store = Store(path)
    assert store.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    with store.transaction() as conn:
        conn.execute("INSERT INTO records VALUES ('r', 'm', 'fog@1', '8/255', 0.03, 0, 2, 3, 1, 1, 0, 1, 5, "
                     "NULL, NULL, 1, 0, NULL, NULL, 0)")  # schema 7: the member last
    records = store.records("r").set_index("attack")
    assert records.loc["pgd", "linf"] == pytest.approx(0.03) and records.loc["pgd", "forward_passes"] == 21
    assert np.isnan(records.loc["fog@1", "linf"]) and np.isnan(records.loc["fog@1", "l2"])
    assert (records["member"] == 0).all()  # a store of one checkpoint per model: member 0


def test_a_store_of_schema_6_reads_as_one_member_per_model_without_being_written(tmp_path):
    path = tmp_path / "old.sqlite"
    with old_store(path, 6) as conn:
        conn.execute("INSERT INTO units VALUES ('r', 'm', '8/255', 'pgd', 0, 1.5)")
        conn.execute("INSERT INTO curves VALUES ('r', 'm', '8/255', 'pgd', 0, 0, 0, 1, 1)")
    before = path.read_bytes()
    reader = Store(path, read_only=True)
    assert reader.records("r")["member"].tolist() == [0] and reader.curves("r")["member"].tolist() == [0]
    assert reader.done_units("r") == {("m", "8/255", "pgd", 0, 0)}
    reader.close()
    assert path.read_bytes() == before  # read through a migrated copy in memory


@pytest.fixture(scope="module")
def two_model_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("tables") / "t.sqlite"
    proc = run_cli("run", "-n", "30", "--eps", "4/255,16/255", "--attacks", "fgsm,pgd", "--quiet", "--store", str(path),
                   "--out", str(path.parent / "out"))
    assert proc.returncode == 0, proc.stderr
    return path


def test_markdown_table_bolds_the_best(two_model_store):
    proc = run_cli("table", "--store", str(two_model_store), "--format", "md")
    assert proc.returncode == 0, proc.stderr
    md = proc.stdout
    assert md.count("Table: ") == 2 and "eps = 4/255" in md and "eps = 16/255" in md and "n = 30" in md
    header = [line for line in md.splitlines() if line.startswith("| Model")][0]
    assert header.index("Clean Top-1") < header.index("FGSM Top-1") < header.index("PGD Top-1") < header.index("Any (worst case) Top-1")
    summary = pd.read_csv(two_model_store.parent / "out" / "results.csv")
    block = md.split("Table: ")[2]  # eps 16/255
    for attack in ("pgd", "fgsm"):
        sel = summary[(summary.eps == "16/255") & (summary.attack == attack)]
        best = sel["top1"].max()
        assert f"**{best:.2f}**" in block or f"{best:.2f}†" in block  # bold where the claim test separates it


def test_latex_table_compiles(two_model_store, tmp_path):
    out = tmp_path / "table.tex"
    proc = run_cli("table", "--store", str(two_model_store), "--format", "latex", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    tex = out.read_text()
    assert tex.count(r"\begin{tabular}") == 2 and r"digits-deit-elliptical" in tex
    assert r"\textbf{" in tex or r"$^\dagger$" in tex  # each column's best: bold, or marked when not separated
    assert typeset(tex, tmp_path).stat().st_size > 1000


def test_csv_and_json_tables(two_model_store):
    csv = run_cli("table", "--store", str(two_model_store), "--format", "csv")
    df = pd.read_csv(pd.io.common.StringIO(csv.stdout))
    assert list(df.columns[:8]) == ["model", "checkpoint", "attack", "eps", "norm", "n", "top1", "top5"] and len(df) == 16
    rows = json.loads(run_cli("table", "--store", str(two_model_store), "--format", "json").stdout)
    assert len(rows) == 16 and {r["protocol"] for r in rows} == {"standard"}


def test_tables_refuse_to_mix_protocols(two_model_store, tmp_path):
    path = tmp_path / "mixed.sqlite"
    shutil.copy(two_model_store, path)
    proc = run_cli("run", "-m", "digits-deit", "-n", "30", "--eps", "4/255,16/255", "--attacks", "fgsm", "--protocol",
                   "nielsen2024", "--quiet", "--store", str(path), "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    ids = Store(path).runs()["id"].tolist()
    mixed = run_cli("table", *ids, "--store", str(path))
    assert mixed.returncode == 2 and "differ in protocol" in mixed.stderr


def test_mcnemar_and_bootstrap_against_hand_computation():
    # 10 paired outcomes: A right & B wrong once, A wrong & B right 6 times, 3 ties.
    a = np.array([1, 0, 0, 0, 0, 0, 0, 1, 1, 0], bool)
    b = np.array([0, 1, 1, 1, 1, 1, 1, 1, 1, 0], bool)
    # exact two-sided binomial on the 7 discordant pairs: 2 * P(X <= 1 | n=7, p=1/2) = 2 * 8 / 128
    assert mcnemar_exact(a, b) == pytest.approx(0.125)
    assert mcnemar_exact(a, a) == 1.0
    lo, hi = bootstrap_ci(a, b, seed=0)
    assert lo < 50.0 < hi and (lo, hi) == bootstrap_ci(a, b, seed=0)
    assert bootstrap_ci(a, a) == (0.0, 0.0)


def test_compare_command(two_model_store):
    result = compare(Store(two_model_store), "digits-deit", "digits-deit-elliptical")
    summary = pd.read_csv(two_model_store.parent / "out" / "results.csv").set_index(["model", "eps", "attack"])
    for r in result.itertuples():
        a = summary.loc[("digits-deit", r.eps, r.attack), "top1"]
        b = summary.loc[("digits-deit-elliptical", r.eps, r.attack), "top1"]
        assert r.top1_a == pytest.approx(a) and r.top1_b == pytest.approx(b)
        assert r.top1_diff == pytest.approx(b - a, abs=0.011) and r.top1_ci_low <= r.top1_diff <= r.top1_ci_high
        assert 0.0 <= r.top1_mcnemar_p <= 1.0
    assert list(result["eps"].unique()) == ["4/255", "16/255"] and "any" in set(result["attack"])
    proc = run_cli("compare", "digits-deit", "digits-deit-elliptical", "--store", str(two_model_store))
    assert proc.returncode == 0 and "McNemar" in proc.stdout and "| 16/255 | pgd | 30 |" in proc.stdout
    bad = run_cli("compare", "digits-deit", "deit-small", "--store", str(two_model_store))
    assert bad.returncode == 2 and "evaluated both digits-deit and deit-small" in bad.stderr


def test_plot_files_are_valid_images(two_model_store, tmp_path):
    proc = run_cli("plot", "--store", str(two_model_store), "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    # a two-column paper's full width (7 in) at 200 dpi; the legend below adds height, never width
    for name in ("robust_top1_vs_eps", "robust_top5_vs_eps", "bars_eps_4_255", "bars_eps_16_255"):
        with Image.open(tmp_path / f"{name}.png") as img:
            img.verify()
        with Image.open(tmp_path / f"{name}.png") as img:
            assert img.size[0] == 1400 and 400 < img.size[1] < 800, (name, img.size)
        svg = ET.parse(tmp_path / f"{name}.svg").getroot()
        assert svg.tag.endswith("svg") and "digits-deit-elliptical" in ET.tostring(svg, encoding="unicode")
        assert (tmp_path / f"{name}.pdf").read_bytes().startswith(b"%PDF")

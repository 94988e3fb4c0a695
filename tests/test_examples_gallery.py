"""robeval examples: stored adversarial examples crafted again from their seeds equal their records
(predictions and perturbation norms), inside their original batches; per-batch attacks are refused;
the figure is written; every user mistake is one line."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from .conftest import FAST_SETTINGS, one_line_error

MODELS = ["digits-deit", "digits-deit-elliptical"]
PER_EXAMPLE = ["fgsm", "pgd", "spsa", "apgd-ce"]
BATCH = 4  # 8 examples in two batches: an example is crafted again inside its own


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> tuple[Path, str]:
    """A small digits run in a store of its own: (store path, run id)."""
    from robeval.api import evaluate_full

    store = tmp_path_factory.mktemp("gallery") / "store.sqlite"
    settings = {**FAST_SETTINGS, "pgd": {"steps": 5}, "square": {"n_queries": 5}}
    result = evaluate_full(
        models=MODELS,
        eps="8/255",
        n_examples=8,
        attacks=",".join([*PER_EXAMPLE, "square"]),
        settings=settings,
        batch_size=BATCH,
        store=store,
    )
    return store, str(result.run_id)


def _records(store: Path, run_id: str, attack: str):
    from robeval.store import Store

    db = Store(store)
    try:
        rec = db.records(run_id)
    finally:
        db.close()
    return rec[rec["attack"] == attack].set_index(["model", "example"])


@pytest.mark.parametrize("attack", PER_EXAMPLE)
def test_per_example_attacks_regenerate_their_stored_records_exactly(stored, attack):
    from robeval.report.gallery import gallery

    store, run_id = stored
    shown = gallery(store, run_id, attack=attack, max_examples=8)
    stored_rows = _records(store, run_id, attack)
    assert len(shown.crafted) == 2 * 8
    for (model, example), crafted in shown.crafted.items():
        row = stored_rows.loc[(model, example)]
        assert crafted.record["adv_pred"] == row["adv_pred"], (model, example)
        assert bool(crafted.record["adv_top1"]) == bool(row["adv_top1"]), (model, example)
        assert crafted.record["linf"] == row["linf"], (model, example)  # bit for bit, not approximately
        assert crafted.record["l2"] == row["l2"], (model, example)
        assert abs(float(abs(crafted.adversarial - crafted.clean).max()) - row["linf"]) < 1e-6
    assert shown.mismatches == [] and all(c.equal for c in shown.checks)
    assert shown.report()[-1] == "all 16 regenerated predictions equal the stored records"


def test_the_command_crafts_only_the_batches_of_the_chosen_examples_and_draws_them(stored, cli, tmp_path):
    from PIL import Image

    store, run_id = stored
    out = tmp_path / "grid.png"
    rows = _records(store, run_id, "pgd").reset_index()
    examples = sorted(rows[rows["batch"] == 1]["example"].unique())[:2]  # two of the second batch
    second_batch = ",".join(map(str, examples))
    result = cli("examples", run_id, "--store", str(store), "--model", MODELS[1], "--model", MODELS[0],
                 "--attack", "pgd", "--examples", second_batch, "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "on batch 1 of run" in result.stdout
    assert "all 4 regenerated predictions equal the stored records" in result.stdout
    with Image.open(out) as image:
        width, height = image.size
    assert image.format == "PNG" and 800 < width < 4000 and 500 < height < 3000


def test_svg_output_and_a_selection_on_both_models(stored, cli, tmp_path):
    store, run_id = stored
    out = tmp_path / "grid.svg"
    rows = _records(store, run_id, "fgsm").reset_index()
    a = rows[rows["model"] == MODELS[0]].set_index("example")
    b = rows[rows["model"] == MODELS[1]].set_index("example")
    condition = "A-robust,B-robust"
    result = cli("examples", run_id, "--store", str(store), "--model", MODELS[0], "--model", MODELS[1],
                 "--attack", "fgsm", "--select", condition, "--max", "2", "--out", str(out))
    expected = sorted(e for e in a.index if a.loc[e, "adv_top1"] and b.loc[e, "adv_top1"])
    assert result.returncode == 0, result.stderr
    assert f"drawing {min(2, len(expected))} examples matching {condition}" in result.stdout
    assert out.read_text().lstrip().startswith("<?xml") and "<svg" in out.read_text()


def test_selection_grammar_reads_the_records(stored):
    from robeval.results.selection import select_examples

    store, run_id = stored
    rec = _records(store, run_id, "pgd").reset_index()
    a = rec[rec["model"] == MODELS[0]].set_index("example")
    b = rec[rec["model"] == MODELS[1]].set_index("example")
    fooled_a = {e for e in a.index if a.loc[e, "clean_top1"] and not a.loc[e, "adv_top1"]}
    robust_b = {e for e in b.index if b.loc[e, "adv_top1"]}
    if fooled_a & robust_b:
        chosen = select_examples(rec, MODELS, select="A-fooled,B-robust", max_examples=8)
        assert set(chosen.examples) == fooled_a & robust_b
    chosen = select_examples(rec, MODELS, select=f"{MODELS[0]}-fooled", max_examples=8)
    assert set(chosen.examples) == fooled_a
    default = select_examples(rec, MODELS, max_examples=8).examples
    disagree = [e for e in a.index if a.loc[e, "adv_top1"] != b.loc[e, "adv_top1"]]
    assert default[: len(disagree)] == sorted(disagree) and sorted(default) == sorted(a.index)


@pytest.mark.parametrize("attack", ["square", "fab-t"])
def test_attacks_that_draw_per_batch_are_refused_in_one_line(stored, cli, attack):
    store, run_id = stored
    result = cli("examples", run_id, "--store", str(store), "--attack", attack)
    assert one_line_error(result, f"cannot regenerate {attack}", "per batch", "square", "fab-t")


def test_a_regenerated_record_that_differs_is_named_and_exits_1(stored, cli, tmp_path):
    store, run_id = stored
    copy = tmp_path / "changed.sqlite"
    with sqlite3.connect(store) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    with sqlite3.connect(copy) as db:
        example = db.execute("SELECT MIN(example) FROM records WHERE run_id = ?", (run_id,)).fetchone()[0]
        db.execute("UPDATE records SET adv_pred = adv_pred + 1 WHERE run_id = ? AND attack = 'fgsm' AND example = ?"
                   " AND model = ?", (run_id, example, MODELS[0]))
    result = cli("examples", run_id, "--store", str(copy), "--model", MODELS[0], "--attack", "fgsm",
                 "--examples", str(example), "--out", str(tmp_path / "x.png"))
    assert result.returncode == 1
    assert f"{MODELS[0]} example {example} differs from its stored record: adv_pred stored" in result.stdout
    assert (tmp_path / "x.png").exists()


def _empty_run(store: Path) -> str:
    from robeval.store import Store

    db = Store(store)
    try:
        return db.create_run({"models": MODELS, "attacks": ["pgd"], "eps": ["8/255"]}, {}, "standard")
    finally:
        db.close()


BAD = {
    "unknown run": (["--attack", "pgd"], "no run 'nope'"),
    "unknown model": (["--attack", "pgd", "--model", "digits-vit"], "no records of model 'digits-vit'"),
    "unknown attack": (["--attack", "fmn"], "has no attack 'fmn'"),
    "unknown eps": (["--attack", "pgd", "--eps", "4/255"], "has no eps 4/255"),
    "malformed select": (["--attack", "pgd", "--select", "A-sleepy"], "'A-sleepy' is not MODEL-fooled|MODEL-robust"),
    "select of no model": (["--attack", "pgd", "--select", "C-fooled"], "'C' is no model of the run"),
    "select without a model": (["--attack", "pgd", "--select", "fooled"], "is not MODEL-fooled"),
    "select matching nothing": (["--attack", "pgd", "--select", "A-fooled,A-robust"], "matches none"),
    "select and examples": (["--attack", "pgd", "--select", "A-robust", "--examples", "1"], "give one of them"),
    "example not in the run": (["--attack", "pgd", "--examples", "9999"], "9999 is not among the run's"),
    "not a figure format": (["--attack", "pgd", "--out", "grid.jpg"], ".png or .svg"),
    "unwritable output": (["--attack", "pgd", "--out", "afile/grid.png"], "cannot create output folder"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line(stored, cli, tmp_path, case):
    store, run_id = stored
    args, words = BAD[case]
    (tmp_path / "afile").write_text("a file, not a folder")
    result = cli("examples", "nope" if case == "unknown run" else run_id, "--store", str(store), *args)
    assert one_line_error(result, words), result.stderr
    assert not list(tmp_path.glob("*.png"))


def test_a_run_without_records_is_one_line(stored, cli):
    store, _ = stored
    run_id = _empty_run(store)
    result = cli("examples", run_id, "--store", str(store), "--attack", "pgd")
    assert one_line_error(result, f"run {run_id} has no stored records")


def test_class_names_follow_the_label_space():
    from robeval.data.arrays import cifar_label_space
    from robeval.data.digits import load_digits_data
    from robeval.data.labels import folder_label_space
    from robeval.report.gallery import class_names

    assert class_names(load_digits_data(10).label_space)[3] == "3"
    assert class_names(cifar_label_space(10))[3] == "cat"
    imagenet = class_names(folder_label_space(["n01440764", "n01443537"]))  # ImageNet wnid folders: timm's names
    assert (imagenet[0], imagenet[1], len(imagenet)) == ("tench", "goldfish", 1000)
    assert class_names(folder_label_space(["cats", "dogs"]))[1] == "dogs"

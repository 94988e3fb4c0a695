"""Which examples a run evaluates and how their folders become the model's classes: label checks before any work, class maps, subsets that fill up past unreadable files."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from PIL import Image

import robeval
from robeval.core.errors import UserError
from robeval.data.folders import load_folder_data
from robeval.data.labels import check_classes, folder_label_space
from robeval.store import Store

from .conftest import run_cli

DIGITS_META = robeval.load_model("digits-deit").meta


def _folder(root, classes, per_class=2, size=12, broken=()):
    rng = np.random.default_rng(0)
    for name in classes:
        (root / name).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            Image.fromarray(rng.integers(0, 255, (size, size), dtype=np.uint8)).save(root / name / f"{i}.png")
    for path in broken:
        (root / path).write_bytes(b"\x89PNG\r\n\x1a\n broken")
    return root


@pytest.mark.parametrize("classes, says", [
    (["n15075141"], "labels of 1000 classes (ImageNet-1k wnid folders"),   # class 999: out of range for 10 classes
    (["n01440764", "n01443537"], "labels of 1000 classes"),                # low indices: would run, meaningless
    (["a", "b", "c"], "labels of 3 classes (sorted folder order"),
])
def test_data_whose_classes_do_not_fit_the_model_is_refused_before_any_work(tmp_path, classes, says):
    data = _folder(tmp_path / "data", classes)
    store = tmp_path / "s.sqlite"
    proc = run_cli("run", "-m", "digits-deit", "--data", str(data), "-n", "2", "--attacks", "fgsm", "--quiet",
                   "--store", str(store))
    assert proc.returncode == 2 and says in proc.stderr and "model digits-deit has 10 classes" in proc.stderr
    assert "--class-map" in proc.stderr and "Traceback" not in proc.stderr
    assert not store.exists() or Store(store).runs().empty  # refused before a run was created


def test_class_map_maps_folders_to_model_classes(tmp_path):
    data = _folder(tmp_path / "data", ["n15075141", "cats"])
    mapping = tmp_path / "map.txt"
    mapping.write_text("n15075141 7\ncats 2\n")
    loaded = load_folder_data(data, DIGITS_META, None, class_map=str(mapping))
    assert sorted(set(loaded.dataset.targets)) == [2, 7]
    check_classes(loaded.label_space, str(data), "digits-deit", 10)  # fits: no error
    with pytest.raises(UserError, match="names class 7 but model m has 5 classes"):
        check_classes(loaded.label_space, str(data), "m", 5)
    (tmp_path / "json.txt").write_text(json.dumps({"n15075141": 1, "cats": 0}))
    assert folder_label_space(["cats", "n15075141"], str(tmp_path / "json.txt")).mapping == {"cats": 0, "n15075141": 1}
    mapping.write_text("n15075141 7\n")
    with pytest.raises(UserError, match="does not name folder 'cats'"):
        folder_label_space(["cats", "n15075141"], str(mapping))
    mapping.write_text("cats seven\n")
    with pytest.raises(UserError, match="not a whole number"):
        folder_label_space(["cats"], str(mapping))


def test_subset_fills_up_past_unreadable_files_and_says_so(tmp_path):
    data = _folder(tmp_path / "data", ["a", "b"], per_class=6, broken=["a/0x.png", "b/0x.png"])
    mapping = tmp_path / "map.txt"
    mapping.write_text("a 0\nb 1\n")
    proc = run_cli("run", "-m", "digits-deit", "--data", str(data), "--class-map", str(mapping), "-n", "8",
                   "--attacks", "fgsm", "--quiet", "--store", str(tmp_path / "s.sqlite"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    df = pd.read_csv(tmp_path / "o" / "results.csv")
    assert (df["n"] == 8).all()  # 8 readable images exist: 8 are evaluated
    run = json.loads((tmp_path / "o" / "run.json").read_text())
    assert sorted(p.rsplit("/", 1)[-1] for p in run["skipped_files"]) == ["0x.png", "0x.png"]
    md = (tmp_path / "o" / "results.md").read_text()
    assert "Skipped 2 unreadable image file(s)" in md and "filled from other readable images" in md
    assert "Skipped 2 unreadable image file(s)" in proc.stdout

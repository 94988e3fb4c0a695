"""ImageNet-style folders: the model's eval transform, the ImageNet class index, balanced subsets."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image

from robeval.core.errors import UserError
from robeval.data.folders import load_folder_data
from robeval.model_config import IMAGENET_CONFIG, ModelConfig
from robeval.models.wrapper import ModelMeta

from .conftest import run_cli

META = ModelMeta(name="deit-tiny", family="deit", config=ModelConfig.from_cfg(IMAGENET_CONFIG))


def test_folder_streams_224_images_in_unit_range_with_imagenet_labels(image_folder):
    data = load_folder_data(image_folder, META, n_examples=6)
    assert [b[0] for b in data.batches(4, only=[1])] == [1]  # a skipped batch is not read
    assert data.num_classes == 1000 and len(data.indices) == 6
    batches = list(data.batches(4))
    assert [b[0] for b in batches] == [0, 1] and [len(b[1]) for b in batches] == [4, 2]
    _, idx, x, y = batches[0]
    assert x.shape == (4, 3, 224, 224) and x.min() >= 0.0 and x.max() <= 1.0
    # n01440764 -> 0, n01443537 -> 1, n01484850 -> 2 in the standard ImageNet-1k order
    labels = torch.cat([b[3] for b in batches])
    assert sorted(labels.tolist()) == [0, 0, 1, 1, 2, 2]


def test_non_wnid_folders_use_sorted_order(tmp_path):
    from PIL import Image

    for name in ("cat", "ant"):
        (tmp_path / name).mkdir()
        Image.new("RGB", (30, 30)).save(tmp_path / name / "a.png")
    data = load_folder_data(tmp_path, META, n_examples=None)
    assert data.num_classes == 2 and data.dataset.classes == ["ant", "cat"]


def test_missing_and_empty_folders(tmp_path):
    with pytest.raises(UserError, match="not found"):
        load_folder_data(tmp_path / "nope", META, None)
    with pytest.raises(UserError, match="no class sub-folders"):
        load_folder_data(tmp_path, META, None)
    (tmp_path / "n01440764").mkdir()
    with pytest.raises(UserError, match="no images"):
        load_folder_data(tmp_path, META, None)


def test_subset_file_keeps_list_order_and_prefix(image_folder, tmp_path):
    from robeval.robustbench_ext.dataset_facts import resolve_subset

    listing = tmp_path / "ids.txt"
    listing.write_text("n01484850/img_1.JPEG\nn01440764/img_3.JPEG\nn01443537/img_0.JPEG\n")
    names = resolve_subset(None, str(listing))
    data = load_folder_data(image_folder, META, n_examples=2, subset=names)
    paths = [data.dataset.path_of(i).split("val/")[1] for i in data.indices]
    assert paths == ["n01484850/img_1.JPEG", "n01440764/img_3.JPEG"]
    listing.write_text("n01484850/missing.JPEG\n")
    with pytest.raises(UserError, match="not in"):
        load_folder_data(image_folder, META, None, subset=resolve_subset(None, str(listing)))
    with pytest.raises(UserError, match="unknown --subset"):
        resolve_subset("rb5k", None)


def test_robustbench_subset_needs_no_robustbench_package(monkeypatch):
    import builtins

    from robeval.robustbench_ext.dataset_facts import resolve_subset

    real_import = builtins.__import__

    def no_robustbench(name, *args, **kwargs):
        if name.split(".")[0] == "robustbench":
            raise ImportError("No module named 'pkg_resources'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_robustbench)
    names = resolve_subset("robustbench-5000", None)
    assert len(names) == 5000 and len(set(names)) == 5000
    assert names[0] == "n09468604/ILSVRC2012_val_00015253.JPEG"  # RobustBench's own order: a prefix is its n_examples


def test_robustbench_models_import_past_its_broken_init(tmp_path, monkeypatch):
    import sys

    from robeval.core.errors import UserError
    from robeval.models import get_spec

    for name in [m for m in sys.modules if m.split(".")[0] == "robustbench"]:
        monkeypatch.delitem(sys.modules, name)
    for name in ("robustbench", "robustbench.utils"):  # the stand-in's modules leave with the test, not the real ones
        monkeypatch.setitem(sys.modules, name, None)
        monkeypatch.delitem(sys.modules, name)
    package = tmp_path / "robustbench"
    package.mkdir()
    (package / "__init__.py").write_text("import pkg_resources_gone  # as robustbench 1.1.1 on a current setuptools\n")
    (package / "utils.py").write_text("def load_model(**kwargs):\n    raise RuntimeError('no weights here')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = get_spec("robustbench:Salman2020Do_R50")  # the zoo imports: no one-line refusal
    assert spec.family == "robustbench" and getattr(sys.modules["robustbench"], "__file__", None) is None
    from robeval.models.loading import load_default_weights

    with pytest.raises(UserError, match="could not load RobustBench model"):
        load_default_weights(None, spec.name, spec.weights)  # the entry's weights, through RobustBench's loader


def test_robustbench_models_without_the_package_say_how_to_install(monkeypatch):
    import importlib.util
    import sys

    from robeval.core.errors import UserError
    from robeval.models import get_spec

    for name in [m for m in sys.modules if m.split(".")[0] == "robustbench"]:
        monkeypatch.delitem(sys.modules, name)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "robustbench" else real(name, *a))
    with pytest.raises(UserError, match=r"pip install 'robeval\[robustbench\]' && pip install --no-deps robustbench"):
        get_spec("robustbench:Salman2020Do_R50")


@pytest.fixture()
def digits_folder(tmp_path):
    """A folder of 8x8-able images for the digits models, plus one non-image and one truncated JPEG."""
    rng = np.random.default_rng(0)
    root = tmp_path / "imgs"
    for name in ("a", "b", "c"):
        (root / name).mkdir(parents=True)
        for i in range(3):
            Image.fromarray(rng.integers(0, 255, (16, 16), dtype=np.uint8)).save(root / name / f"{i}.png")
    (root / "a" / "notes.JPEG").write_text("this is not an image")
    good = root / "b" / "big.jpg"
    Image.fromarray(rng.integers(0, 255, (64, 64, 3), dtype=np.uint8)).save(good, quality=95)
    data = good.read_bytes()
    (root / "c" / "cut.jpg").write_bytes(data[: len(data) // 3])
    good.unlink()
    (tmp_path / "classes.txt").write_text("a 0\nb 3\nc 7\n")  # three digit classes: say which, with --class-map
    return root


def test_unreadable_files_are_skipped_counted_and_named(digits_folder, tmp_path):
    proc = run_cli("run", "-m", "digits-deit", "--data", str(digits_folder), "--class-map", str(digits_folder.parent / "classes.txt"), "--attacks", "fgsm", "--quiet",
                   "--store", str(tmp_path / "s.sqlite"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert "Skipped 2 unreadable image file(s)" in proc.stdout and "notes.JPEG" in proc.stdout and "cut.jpg" in proc.stdout
    run = json.loads((tmp_path / "o" / "run.json").read_text())
    assert sorted(p.rsplit("/", 1)[-1] for p in run["skipped_files"]) == ["cut.jpg", "notes.JPEG"]
    df = pd.read_csv(tmp_path / "o" / "results.csv")
    assert (df["n"] == 9).all()


def test_strict_data_makes_them_an_error(digits_folder, tmp_path):
    proc = run_cli("run", "-m", "digits-deit", "--data", str(digits_folder), "--class-map", str(digits_folder.parent / "classes.txt"), "--attacks", "fgsm", "--quiet",
                   "--strict-data", "--store", str(tmp_path / "s.sqlite"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "unreadable image file" in proc.stderr and "Traceback" not in proc.stderr


def test_empty_class_folders_are_a_user_error(tmp_path):
    (tmp_path / "data" / "n01440764").mkdir(parents=True)
    proc = run_cli("run", "-m", "digits-deit", "--data", str(tmp_path / "data"), "--quiet", "--store", str(tmp_path / "s.sqlite"))
    assert proc.returncode == 2 and "has no images" in proc.stderr


def test_the_digits_are_scikit_learns_read_without_importing_it(monkeypatch):
    """robeval reads scikit-learn's digits file itself (importing sklearn.datasets costs a second per
    process): the same arrays ``load_digits`` gives, and the same where the file cannot be found."""
    import numpy as np
    from sklearn.datasets import load_digits

    from robeval.data import digits

    bunch = load_digits()
    expected = ((bunch.images.astype(np.float32) / 16.0)[:, None, :, :], bunch.target.astype(np.int64))
    assert digits.digits_file() is not None
    for found in (digits.digits_file(), None):
        monkeypatch.setattr(digits, "digits_file", lambda found=found: found)
        digits._digits_arrays_cached.cache_clear()
        images, labels = digits.digits_arrays()
        assert images.dtype == np.float32 and np.array_equal(images, expected[0])
        assert labels.dtype == np.int64 and np.array_equal(labels, expected[1])
    digits._digits_arrays_cached.cache_clear()

"""The distribution-shift kinds of issue 24, each read from tiny files in its published format:
ImageNet-V2 (class-index folders), ImageNet-Sketch (wnid folders, ``sketch/``), ImageNet-3DCC and
ImageNet-C-bar (ImageNet-C's tree, their own corruption sets), CIFAR-10-C / CIFAR-100-C (``.npy``
per corruption, severities one after another) and CIFAR-10.1 (``.npy`` images and labels); the
corruption sets carried by the kinds; their tables; and the one-line errors.

The models are "colour readers": class k is predicted from an image whose red channel is k * step
(out of 255), so a run's top-1 is 100% exactly when every image reached the model with its label.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image

from robeval.api import evaluate_full
from robeval.attacks import list_attacks
from robeval.core.errors import UserError
from robeval.data.arrays import ArrayImages
from robeval.data.labels import imagenet_wnids
from robeval.evaluation.config import make_config
from robeval.model_config import ModelConfig
from robeval.models import register_model
from robeval.models.registry import MODELS
from robeval.models.weights import NO_WEIGHTS
from robeval.report.paper import render
from robeval.report.shift_table import REPORTED, corruption_grid, shift_caption, shift_grid
from robeval.shifts.catalog import COMMON, CORRUPTION_SETS, EXTRA, Condition
from robeval.shifts.condition_images import CorruptedImages, corrupt_tensor
from robeval.shifts.kinds import SHIFT_KINDS

from . import published_files


class ColourReader(torch.nn.Module):
    """Predicts class k for a red channel of k * step / 255 (a parameter, so it is a model to the engine)."""

    def __init__(self, num_classes: int, step: int) -> None:
        super().__init__()
        self.levels = torch.nn.Parameter(torch.arange(num_classes, dtype=torch.float32) * step)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        red = x[:, 0].mean((1, 2)) * 255
        return -(self.levels[None] - red[:, None]).abs()


READERS = {  # name -> classes, red step, side
    "toy-colour-imagenet": (1000, 1, 16),
    "toy-colour-cifar10": (10, 20, 32),
    "toy-colour-cifar100": (100, 2, 32),
}


@pytest.fixture(scope="module", autouse=True)
def colour_readers():
    for name, (classes, step, side) in READERS.items():
        cfg = dict(input_size=(3, side, side), mean=(0.0,) * 3, std=(1.0,) * 3, interpolation="nearest",
                   crop_pct=1.0, num_classes=classes)

        def build(classes=classes, step=step, cfg=cfg):
            net = ColourReader(classes, step)
            object.__setattr__(net, "pretrained_cfg", cfg)
            return net

        register_model(name, family="toy", weights=NO_WEIGHTS, config=ModelConfig.from_cfg(cfg), options={},
                       description="reads its class off the red channel")(build)
    yield
    for name in READERS:
        MODELS.remove(name)


def coloured(red: int, side: int = 16) -> np.ndarray:
    image = np.zeros((side, side, 3), dtype=np.uint8)
    image[..., 0] = red
    return image


def save_classes(folder, names_and_reds, per_class=1, suffix=".png"):
    for name, red in names_and_reds:
        (folder / name).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            Image.fromarray(coloured(red)).save(folder / name / f"img_{i}{suffix}", format="PNG")  # lossless


def run(model, data, shift, **options):
    return evaluate_full(models=model, weights="random", data=str(data), shift=shift, batch_size=8, **options)


# --- the registrations -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SHIFT_KINDS))
def test_every_kind_carries_its_facts(name):
    kind = SHIFT_KINDS.require(name)
    assert kind.name == name and kind.title and kind.description and kind.reported_as in REPORTED
    if kind.has_conditions:
        default = kind.conditions()
        names = {c.name for c in default}  # the records' attack column holds them beside the attacks
        assert default and len(names) == len(default) and not names & {s.name for s in list_attacks()}
        assert {c.corruption for c in default} <= set(kind.corruption_set.names)
    else:
        assert kind.conditions() == [] and kind.has_clean_images


def test_corruption_sets_are_disjoint_and_have_the_published_sizes():
    sizes = {name: (len(s.names), len(s.benchmark)) for name, s in CORRUPTION_SETS.items()}
    assert sizes == {"imagenet-c": (19, 15), "imagenet-3dcc": (12, 12), "imagenet-c-bar": (10, 10)}
    every = [c for s in CORRUPTION_SETS.values() for c in s.names]
    assert len(every) == len(set(every))


@pytest.mark.parametrize("shift, corruptions, expected", [
    ("imagenet-3dcc", None, 12),
    ("imagenet-3dcc", "near_focus,fog_3d", 2),
    ("imagenet-c-bar", None, 10),
    ("cifar10-c", None, 15),
    ("cifar100-c", "all", 19),
    ("corruptions", "extra", 4),
])
def test_corruptions_are_parsed_by_the_run_s_shift_kind(shift, corruptions, expected):
    config = make_config(models="digits-deit", data="/some/where", shift=shift, corruptions=corruptions)
    assert len(config.corruptions) == expected and config.severities == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("shift, corruption, message", [
    ("imagenet-3dcc", "fog", "unknown corruption 'fog' (did you mean fog_3d?) (fog is an ImageNet-C corruption"),
    ("imagenet-c", "near_focus", "near_focus is an ImageNet-3DCC corruption: --shift imagenet-3dcc"),
    ("imagenet-c-bar", "sparkle", "unknown corruption 'sparkle' (did you mean sparkles"),
    ("cifar10-c", "near_focus", "ImageNet-C's: gaussian_noise"),
])
def test_an_unknown_corruption_of_the_kind_s_set_is_one_line(shift, corruption, message):
    with pytest.raises(UserError, match=r"^[^\n]*$") as raised:
        make_config(models="digits-deit", data="/x", shift=shift, corruptions=corruption)
    assert message in str(raised.value)


# --- ImageNet-V2 and ImageNet-Sketch ---------------------------------------------------------------


def test_imagenet_v2_maps_each_folder_by_its_integer_value(tmp_path):
    classes = [0, 1, 2, 10, 100, 200]  # listed as strings: 0, 1, 10, 100, 2, 200
    save_classes(tmp_path / "v2", [(str(k), k) for k in classes], suffix=".jpeg")
    res = run("toy-colour-imagenet", tmp_path / "v2", "imagenet-v2", attacks="fgsm", eps="1/255")
    clean = res.records[res.records["attack"] == "clean"]
    assert sorted(clean["label"]) == classes and clean["adv_top1"].all()  # folder "10" is class 10
    assert set(res.summary["shift"]) == {"imagenet-v2"}
    grid = shift_grid(res.summary)
    assert grid.loc["toy-colour-imagenet", "ImageNet-V2 Top-1"] == "100.00"
    assert any(c.startswith("ImageNet-V2 FGSM") for c in grid.columns)  # the attack on V2 has its column
    save_classes(tmp_path / "v2", [("007", 7)])
    with pytest.raises(UserError, match="folder '007' is not a class index 0..999 written as a plain integer"):
        run("toy-colour-imagenet", tmp_path / "v2", "imagenet-v2")
    with pytest.raises(UserError, match="data folder not found"):
        run("toy-colour-imagenet", tmp_path / "missing", "imagenet-v2")


def test_imagenet_sketch_reads_the_download_or_its_sketch_folder_and_refuses_other_folders(tmp_path):
    wnids = imagenet_wnids()[:3]
    save_classes(tmp_path / "download" / "sketch", [(w, i) for i, w in enumerate(wnids)], per_class=2, suffix=".JPEG")
    for root in (tmp_path / "download", tmp_path / "download" / "sketch"):
        res = run("toy-colour-imagenet", root, "imagenet-sketch", n_examples=3)
        assert sorted(res.records["label"]) == [0, 1, 2] and res.records["adv_top1"].all()  # one per class
    assert "ImageNet-Sketch Top-1" in render(res.summary, "md")
    save_classes(tmp_path / "download" / "sketch", [("cat", 5)])
    with pytest.raises(UserError, match="folder 'cat' is not an ImageNet-1k wnid"):
        run("toy-colour-imagenet", tmp_path / "download", "imagenet-sketch")


# --- ImageNet-3DCC and ImageNet-C-bar --------------------------------------------------------------


@pytest.mark.parametrize("shift, corruption, column, title", [
    ("imagenet-3dcc", "near_focus", "ImageNet-3DCC Top-1", "ImageNet-3DCC"),
    ("imagenet-c-bar", "sparkles", "ImageNet-C-bar mean error", "ImageNet-C-bar"),
])
def test_3dcc_and_c_bar_trees_are_read_with_their_own_corruptions(shift, corruption, column, title, tmp_path):
    wnids = imagenet_wnids()[:2]
    for severity in (1, 2):
        save_classes(tmp_path / "tree" / corruption / str(severity), [(w, i) for i, w in enumerate(wnids)], suffix=".JPEG")
    res = run("toy-colour-imagenet", tmp_path / "tree", shift, corruptions=corruption, severities="1,2")
    assert set(res.summary["attack"]) == {f"{corruption}@1", f"{corruption}@2"}  # no clean images
    assert res.records["adv_top1"].all()
    grid = shift_grid(res.summary)
    assert grid.loc["toy-colour-imagenet", column] == ("100.00" if column.endswith("Top-1") else "0.00")
    assert "no published AlexNet errors" in "; ".join(shift_caption(res.summary)) and "mCE:" not in "; ".join(shift_caption(res.summary))
    assert list(corruption_grid(res.summary).columns) == [corruption.replace("_", " ")]
    with pytest.raises(UserError, match=f"{title} folder missing: .*{corruption}/3"):
        run("toy-colour-imagenet", tmp_path / "tree", shift, corruptions=corruption, severities="3")
    with pytest.raises(UserError, match="holds no clean images"):
        run("toy-colour-imagenet", tmp_path / "tree", shift, corruptions=corruption, attacks="fgsm")


# --- CIFAR-10-C / CIFAR-100-C ----------------------------------------------------------------------


def write_cifar_c(root, corruptions, n=20, classes=10, step=20):
    """``n`` test images per severity (the published files have 10,000); severity s shows the red of
    class (label + s - 1): only severity 1's images carry their own label."""
    root.mkdir(parents=True, exist_ok=True)
    labels = np.arange(n) % classes
    np.save(root / "labels.npy", np.tile(labels, 5))
    for corruption in corruptions:
        rows = [coloured(((label + s) % classes) * step, 32) for s in range(5) for label in labels]
        np.save(root / f"{corruption}.npy", np.stack(rows))
    return labels


@pytest.mark.parametrize("shift, model, classes, step", [
    ("cifar10-c", "toy-colour-cifar10", 10, 20),
    ("cifar100-c", "toy-colour-cifar100", 100, 2),
])
def test_cifar_c_reads_each_severity_s_rows(shift, model, classes, step, tmp_path):
    write_cifar_c(tmp_path / "c", ["fog", "snow"], classes=classes, step=step)
    res = run(model, tmp_path / "c", shift, corruptions="fog,snow", severities="1,2", n_examples=10)
    top1 = res.summary.set_index("attack")["top1"]
    assert top1["fog@1"] == top1["snow@1"] == 100.0 and top1["fog@2"] == top1["snow@2"] == 0.0
    assert (res.summary["n"] == 10).all() and set(res.records["example"]) == set(range(10))
    title = "CIFAR-10-C" if classes == 10 else "CIFAR-100-C"
    assert shift_grid(res.summary).loc[model, f"{title} Top-1"] == "50.00"
    assert "mCE needs ImageNet images" in "; ".join(shift_caption(res.summary))


def test_cifar_c_selection_first_and_severity_rows(tmp_path):
    labels = write_cifar_c(tmp_path / "c", ["fog"], n=30)
    config = SimpleNamespace(data=str(tmp_path / "c"), corruptions=["fog"], severities=[3], subset=None, class_map=None,
                             n_examples=5, selection="first")
    kind = SHIFT_KINDS.require("cifar10-c")
    data = kind.load(config, None)
    assert data.indices == [0, 1, 2, 3, 4] and data.input_size == (3, 32, 32) and data.label_space.num_classes == 10
    images = kind.condition_dataset(data, Condition("fog@3", "fog", 3), config)
    image, label, norms = images[7]
    assert int(label) == labels[7] and torch.isnan(norms).all()
    assert round(float(image[0].mean()) * 255) == ((labels[7] + 2) % 10) * 20  # row 2 * 30 + 7 of fog.npy
    assert images.path_of(7).endswith("fog.npy row 67")


def cifar_c_config(root, **changes):
    values = dict(data=str(root), corruptions=["fog"], severities=[1], subset=None, class_map=None, n_examples=None,
                  selection="balanced")
    return SimpleNamespace(**{**values, **changes})


@pytest.mark.parametrize("damage, message", [
    (lambda root: (root / "labels.npy").unlink(), "file missing: .*labels.npy \\(expected integer labels"),
    (lambda root: (root / "fog.npy").unlink(), "file missing: .*fog.npy \\(expected uint8 \\(100, 32, 32, 3\\)"),
    (lambda root: np.save(root / "fog.npy", np.array([{"a": 1}] * 100, dtype=object), allow_pickle=True),
     "fog.npy holds Python objects, which robeval does not unpickle"),
    (lambda root: np.save(root / "fog.npy", np.zeros((100, 28, 28, 3), np.uint8)),
     "fog.npy holds uint8 \\(100, 28, 28, 3\\), expected uint8 \\(100, 32, 32, 3\\)"),
    (lambda root: np.save(root / "fog.npy", np.zeros((50, 32, 32, 3), np.uint8)), "fog.npy holds uint8 \\(50, 32, 32, 3\\)"),
    (lambda root: np.save(root / "labels.npy", np.zeros(99, np.int64)), "has 99 labels, expected 5 severities x the test set"),
    (lambda root: np.save(root / "labels.npy", np.arange(100)), "the five severities' labels differ"),
    (lambda root: np.save(root / "labels.npy", np.zeros(100, np.float32)), "expected integer labels"),
    (lambda root: (root / "fog.npy").write_bytes(b"not an array"), "fog.npy holds Python objects|fog.npy is not a readable"),
    (lambda root: np.savez(root / "fog.npz", a=np.zeros(3)) or (root / "fog.npz").rename(root / "fog.npy"),
     "fog.npy is an .npz archive"),
])
def test_cifar_c_files_that_are_missing_or_not_the_published_arrays_are_one_line(damage, message, tmp_path):
    write_cifar_c(tmp_path / "c", ["fog"])
    damage(tmp_path / "c")
    with pytest.raises(UserError, match=message) as raised:
        SHIFT_KINDS.require("cifar10-c").load(cifar_c_config(tmp_path / "c"), None)
    assert "\n" not in str(raised.value)


def test_cifar_c_refuses_folder_options_a_missing_folder_and_an_imagenet_model(tmp_path):
    write_cifar_c(tmp_path / "c", ["fog"])
    kind = SHIFT_KINDS.require("cifar10-c")
    with pytest.raises(UserError, match="--class-map apply to an image folder, not to --shift cifar10-c"):
        make_config(models="cifar10-vit", data=str(tmp_path / "c"), shift="cifar10-c", class_map="m.txt")
    with pytest.raises(UserError, match="--shift cifar10-c: data folder not found"):
        kind.load(cifar_c_config(tmp_path / "nowhere"), None)
    with pytest.raises(UserError, match="file missing: .*snow.npy"):
        kind.load(cifar_c_config(tmp_path / "c", corruptions=["fog", "snow"]), None)  # every file checked first
    with pytest.raises(UserError, match=r"model toy-colour-imagenet expects input \(3, 16, 16\) but .* gives \(3, 32, 32\)"):
        run("toy-colour-imagenet", tmp_path / "c", "cifar10-c", corruptions="fog", severities="1")


# --- CIFAR-10.1 --------------------------------------------------------------------------------------


def write_cifar10_1(folder, n=20):
    folder.mkdir(parents=True, exist_ok=True)
    labels = (np.arange(n) * 3) % 10
    np.save(folder / "cifar10.1_v6_data.npy", np.stack([coloured(label * 20, 32) for label in labels]))
    np.save(folder / "cifar10.1_v6_labels.npy", labels)


def test_cifar10_1_is_clean_data_that_can_be_attacked(tmp_path):
    write_cifar10_1(tmp_path / "repo" / "datasets")
    for root in (tmp_path / "repo", tmp_path / "repo" / "datasets"):
        res = run("toy-colour-cifar10", root, "cifar10.1", attacks="fgsm", eps="1/255", n_examples=10)
        clean = res.summary[res.summary["attack"] == "clean"]
        assert float(clean["top1"].iloc[0]) == 100.0 and int(clean["n"].iloc[0]) == 10
    grid = shift_grid(res.summary)
    assert grid.loc["toy-colour-cifar10", "CIFAR-10.1 Top-1"] == "100.00"
    assert any(c.startswith("CIFAR-10.1 FGSM") for c in grid.columns)
    (tmp_path / "repo" / "datasets" / "cifar10.1_v6_labels.npy").unlink()
    with pytest.raises(UserError, match="file missing: .*cifar10.1_v6_labels.npy"):
        run("toy-colour-cifar10", tmp_path / "repo", "cifar10.1")
    with pytest.raises(UserError, match="has no corruptions or severities to choose"):
        run("toy-colour-cifar10", tmp_path / "repo", "cifar10.1", corruptions="fog")


# --- generated corruptions at CIFAR and MNIST sizes ------------------------------------------------


@pytest.mark.parametrize("corruption", COMMON + EXTRA)
def test_generated_corruptions_keep_cifar_and_mnist_shapes(corruption):
    rng = np.random.default_rng(0)
    cifar = ArrayImages(rng.integers(0, 256, (2, 32, 32, 3), dtype=np.uint8), np.array([3, 5]))
    image, label, norms = CorruptedImages(cifar, Condition(f"{corruption}@3", corruption, 3), seed=1)[1]
    assert image.shape == (3, 32, 32) and int(label) == 5 and norms.shape == (2,)
    mnist = torch.from_numpy(rng.random((1, 28, 28), dtype=np.float32))
    out = corrupt_tensor(mnist, corruption, 3, seed=2)
    assert out.shape == (1, 28, 28) and float(out.min()) >= 0 and float(out.max()) <= 1


# --- tables of several benchmarks ------------------------------------------------------------------


def _condition_row(corruption: str, severity: int, top1: float, shift: str, source: str) -> dict:
    """A summary row of a shifted condition, with the facts robeval.results.summary gives it."""
    return dict(model="m", eps="4/255", attack=f"{corruption}@{severity}", corruption=corruption, severity=severity,
                top1=top1, shift=shift, data=f"{source} ({SHIFT_KINDS.require(shift).title})", source=source, n=10)


def test_several_corruption_benchmarks_in_one_table_keep_their_own_columns():
    rows = [_condition_row(c, s, 60.0, "cifar10-c", "/d") for c in ("fog", "snow") for s in (1, 2)]
    rows += [_condition_row("near_focus", s, 40.0, "imagenet-3dcc", "/i") for s in (1, 2)]
    rows += [_condition_row("fog", 1, 30.0, "imagenet-c", "/i")]
    summary = pd.DataFrame(rows)
    grid = shift_grid(summary)
    assert grid.loc["m", "CIFAR-10-C Top-1"] == "60.00" and grid.loc["m", "ImageNet-3DCC Top-1"] == "40.00"
    assert grid.loc["m", "Mean corruption error"] == "70.00" and "ImageNet-C mCE" not in grid.columns  # 1 of 75
    detail = corruption_grid(summary)
    assert {"CIFAR-10-C: fog", "ImageNet-C: fog", "ImageNet-3DCC: near focus"} <= set(detail.columns)
    caption = "; ".join(shift_caption(summary))
    assert "mCE needs the 15 corruptions at severities 1-5" in caption and "ImageNet-3DCC has no published" in caption


@pytest.mark.parametrize("data, model, write", [
    ("cifar10", "cifar10-vit", published_files.cifar10_python),
    ("mnist", "mnist-vit", published_files.mnist),
])
def test_generated_corruptions_run_on_the_published_32_and_28_px_data(data, model, write, tmp_path):
    write(tmp_path / "data")
    res = evaluate_full(models=model, weights="random", data=data, data_dir=str(tmp_path / "data"), shift="corruptions",
                        corruptions="fog,gaussian_noise", severities="2", n_examples=4, batch_size=4)
    assert set(res.summary["attack"]) == {"clean", "fog@2", "gaussian_noise@2"} and (res.summary["n"] == 4).all()
    assert (res.records[res.records["attack"] == "gaussian_noise@2"]["linf"] > 0).all()  # corrupted, at its size
    assert "mCE needs ImageNet images" in "; ".join(shift_caption(res.summary))  # AlexNet's errors are not CIFAR's or MNIST's


def test_a_32_px_registered_model_runs_on_cifar10_c(tmp_path):
    write_cifar_c(tmp_path / "c", ["fog"])
    res = run("cifar10-vit", tmp_path / "c", "cifar10-c", corruptions="fog", severities="5", n_examples=4)
    assert list(res.summary["attack"]) == ["fog@5"] and int(res.summary["n"].iloc[0]) == 4


def test_a_shift_without_clean_images_is_stored(tmp_path):
    write_cifar_c(tmp_path / "c", ["fog"])
    res = run("toy-colour-cifar10", tmp_path / "c", "cifar10-c", corruptions="fog", severities="1", n_examples=4,
              store=str(tmp_path / "s.sqlite"))
    assert res.records["linf"].isna().all()  # no clean image: the shift's size is not measured
    from robeval.results.runs import load_run
    from robeval.store import Store

    stored = load_run(Store(tmp_path / "s.sqlite"), res.run_id)
    assert stored.records["linf"].isna().all() and stored.records["l2"].isna().all()
    assert list(stored.summary["attack"]) == ["fog@1"] and int(stored.summary["n"].iloc[0]) == 4


@pytest.mark.parametrize("shift, in_memory", [("cifar10-c", True), ("cifar10.1", True), ("imagenet-r", False),
                                              ("imagenet-c", False)])  # fmt: skip
def test_a_shift_copy_takes_the_selection_of_its_own_kind_of_copy(shift, in_memory):
    """--selection first picks the first examples of a copy held as arrays (CIFAR-10-C, CIFAR-10.1), as of
    --data cifar10; a copy in image folders takes --subset, and says so naming the shift."""
    options = dict(models="digits-deit", data="/some/where", shift=shift, selection="first")
    if in_memory:
        assert make_config(**options).selection == "first"
    else:
        with pytest.raises(UserError, match=f"--selection first applies to in-memory data sets; --shift {shift} takes"):
            make_config(**options)

"""``--data cifar10|cifar100|mnist --data-dir DIR``: the published files read in every format, the
images and labels as published, a tampered pickle refused, missing files named, and runs."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from robeval.core.errors import UserError
from robeval.data.loading import PUBLISHED, load_data

from . import published_files as pf
from .conftest import one_line_error

WRITERS = {  # data set -> its formats' writers
    "cifar10": (pf.cifar10_python, pf.cifar10_binary),
    "cifar100": (pf.cifar100_python, pf.cifar100_binary),
    "mnist": (
        pf.mnist,
        lambda root: pf.mnist(root, gz=True),
        lambda root: pf.mnist(root, gz=True, torchvision_layout=True),
    ),
}


def config(data: str, data_dir: Path, **over) -> SimpleNamespace:
    values = dict(data=data, data_dir=str(data_dir), split="test", selection="balanced", n_examples=None)
    return SimpleNamespace(**{**values, "subset": None, "class_map": None, **over})


def test_every_published_set_has_writers():
    assert set(WRITERS) == set(PUBLISHED)


@pytest.mark.parametrize("name,index", [(n, i) for n, ws in WRITERS.items() for i in range(len(ws))])
def test_each_format_reads_the_published_images_and_labels(name, index, tmp_path):
    x, y = WRITERS[name][index](tmp_path)
    data = load_data(config(name, tmp_path), None)  # type: ignore[arg-type]
    assert data.indices == list(range(len(y))) and data.num_classes == PUBLISHED[name].num_classes
    assert data.input_size == (x.shape[3], x.shape[1], x.shape[2])
    image, label = data.dataset[7]
    assert int(label) == y[7]
    assert np.array_equal((image.permute(1, 2, 0).numpy() * 255).round().astype(np.uint8), x[7])
    if x.shape[3] == 3:  # channel planes in CIFAR's order: the top-left pixel is (255, 0, 128)
        assert image[:, 0, 0].tolist() == pytest.approx([1.0, 0.0, 128 / 255])


def test_cifar10_class_names_from_the_meta_file_and_train_split(tmp_path):
    pf.cifar10_python(tmp_path, n=20)
    data = load_data(config("cifar10", tmp_path), None)  # type: ignore[arg-type]
    assert data.label_space.mapping["truck"] == 9 and data.name == "cifar10 (test)"
    train = load_data(config("cifar10", tmp_path, split="train"), None)  # type: ignore[arg-type]
    assert len(train.indices) == 5 * 20 and train.name == "cifar10 (train)"


def test_selection_first_is_robustbench_and_balanced_covers_the_classes(tmp_path):
    pf.cifar100_python(tmp_path, n=200)
    first = load_data(config("cifar100", tmp_path, n_examples=100, selection="first"), None)  # type: ignore[arg-type]
    assert first.indices == list(range(100))
    labels = np.arange(200) % 100
    balanced = load_data(config("cifar100", tmp_path, n_examples=100), None)  # type: ignore[arg-type]
    assert len(set(labels[balanced.indices])) == 100


def test_a_pickle_that_would_run_code_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    pf.write_pickle(tmp_path / "cifar-10-batches-py" / "test_batch", {b"data": Payload(), b"labels": [0]})
    with pytest.raises(UserError, match="asks to run posix.system|asks to run os.system"):
        load_data(config("cifar10", tmp_path), None)  # type: ignore[arg-type]
    assert not marker.exists()


@pytest.mark.parametrize(
    "name,words",
    [
        ("cifar10", ("cifar-10-batches-py/test_batch", "cifar-10-batches-bin/test_batch.bin", "cs.toronto.edu")),
        ("cifar100", ("cifar-100-python/test", "cifar-100-binary/test.bin")),
        ("mnist", ("t10k-images-idx3-ubyte", "MNIST/raw", "mnist")),
    ],
)
def test_missing_files_are_named_with_where_they_are_published(name, words, cli, tmp_path):
    result = cli("run", "--data", name, "--data-dir", str(tmp_path), "-m", "cifar10-vit", "--weights", "random")
    assert one_line_error(result, *words), result.stderr


def test_broken_files_are_one_line_errors(tmp_path):
    folder = tmp_path / "cifar-10-batches-bin"
    folder.mkdir()
    (folder / "test_batch.bin").write_bytes(b"\x00" * 100)
    with pytest.raises(UserError, match="not a whole number of 3073-byte"):
        load_data(config("cifar10", tmp_path), None)  # type: ignore[arg-type]
    (tmp_path / "t10k-images-idx3-ubyte").write_bytes(b"PK\x03\x04 a zip file")
    (tmp_path / "t10k-labels-idx1-ubyte").write_bytes(pf.idx_bytes(np.zeros(3)))
    with pytest.raises(UserError, match="is not an idx file"):
        load_data(config("mnist", tmp_path), None)  # type: ignore[arg-type]
    import zipfile

    (tmp_path / "cifar-10-batches-py").mkdir()
    with zipfile.ZipFile(tmp_path / "cifar-10-batches-py" / "test_batch", "w") as z:  # another program's file
        z.writestr("a", "b")
    with pytest.raises(UserError, match="not a CIFAR python-version batch") as caught:
        load_data(config("cifar10", tmp_path), None)  # type: ignore[arg-type]
    assert "\n" not in str(caught.value)
    pf.write_pickle(tmp_path / "cifar-100-python" / "test", [1, 2, 3])
    with pytest.raises(UserError, match="not a dict"):
        load_data(config("cifar100", tmp_path), None)  # type: ignore[arg-type]


def test_a_data_dir_given_as_data_is_pointed_to_the_data_set(tmp_path):
    pf.cifar10_python(tmp_path, n=20)
    with pytest.raises(UserError, match="holds cifar-10-batches-py: --data cifar10 --data-dir"):
        load_data(config(str(tmp_path), tmp_path), None)  # type: ignore[arg-type]


def test_options_that_do_not_apply_are_refused(tmp_path, image_folder):
    """Which options apply to which data is judged with the rest of a run's options, before torch."""
    from robeval.evaluation.config import make_config

    for options, words in ((dict(data=str(image_folder), split="train"), "--split applies to"),
                           (dict(data="cifar10", split="val"), "--split"),
                           (dict(data="cifar10", selection="random"), "--selection"),
                           (dict(data=str(image_folder), selection="first"), "--selection first applies"),
                           (dict(data="digits", subset="robustbench-5000"), "apply to an image folder")):  # fmt: skip
        with pytest.raises(UserError, match=words):
            make_config(**options, data_dir=str(tmp_path))


def test_run_on_cifar10_with_fgsm_and_pgd(cli, tmp_path):
    pf.cifar10_python(tmp_path / "d", n=30)
    result = cli("run", "--data", "cifar10", "--data-dir", "d", "-m", "cifar10-vit", "--weights", "random",
                 "-n", "20", "--attacks", "fgsm,pgd", "--set", "pgd.steps=2", "--out", "o")  # fmt: skip
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(tmp_path / "o" / "results.csv")
    assert set(table["attack"]) >= {"clean", "fgsm", "pgd"} and (table["n"] == 20).all()
    assert (table["data"] == "cifar10 (test)").all()


@pytest.mark.parametrize("name,model", [("mnist", "mnist-vit-super"), ("cifar100", "cifar100-vit-elliptical")])
def test_runs_on_mnist_and_cifar100(name, model, cli, tmp_path):
    WRITERS[name][0](tmp_path / "d")
    result = cli("run", "--data", name, "--data-dir", "d", "-m", model, "--weights", "random", "-n", "10",
                 "--attacks", "fgsm", "--out", "o")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (pd.read_csv(tmp_path / "o" / "results.csv")["n"] == 10).all()


def test_data_that_does_not_fit_the_model_is_refused(cli, tmp_path):
    pf.cifar10_python(tmp_path / "d", n=20)
    result = cli("run", "--data", "cifar10", "--data-dir", "d", "-m", "mnist-vit", "--weights", "random")
    assert one_line_error(result, "expects input (1, 28, 28)", "(3, 32, 32)"), result.stderr
    result = cli("run", "--data", "cifar10", "--data-dir", "d", "-m", "cifar100-vit", "--weights", "random")
    assert one_line_error(result, "100 classes"), result.stderr

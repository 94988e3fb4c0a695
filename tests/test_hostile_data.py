"""Data that is not what it seems (issue 52, items 5-7), through the command line as a user meets it:

* a resume whose checkpoint changed at its path, or whose model imports a helper that changed, is one
  line naming what changed, before anything is written;
* members that hold another model's weights (by the name a checkpoint records) or one file twice (two
  spellings, a link, a copy of its bytes) are one line before anything is stored.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import uuid
from pathlib import Path

import pytest
import torch

import robeval
from robeval.api import evaluate_full

from .conftest import one_line_error
from .reference_runs import StopAfter

ZOO = Path(robeval.__file__).parent / "zoo"
QUICK = ["-n", "10", "--batch-size", "5", "--attacks", "fgsm", "--threads", "1", "--quiet"]


def digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with the SHA-256 of its bytes (Python's bytecode caches left out: the
    interpreter's, not robeval's)."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "-"
        for p in sorted(folder.rglob("*"))
        if "__pycache__" not in p.parts and not p.is_symlink()
    }


def variant(path: Path, seed: int, model: str = "digits-deit", recorded: str | None = None) -> Path:
    """``model``'s shipped weights moved by noise of ``seed`` (a member of its own), written to ``path``;
    a safetensors file records ``recorded`` as its model, as train-demo's metadata does."""
    from safetensors.torch import load_file, save_file

    state = load_file(str(ZOO / f"{model}.safetensors"))
    noise = torch.Generator().manual_seed(seed)
    moved = {k: (v + 0.1 * v.std() * torch.randn(v.shape, generator=noise)).contiguous() for k, v in state.items()}
    if path.suffix == ".safetensors":
        save_file(moved, str(path), metadata={"model": recorded} if recorded else None)
    else:
        torch.save(moved, path)
    return path


# -- 5: a resume loads what the run started with, or says what changed --------------------------------


def test_a_resume_refuses_a_member_checkpoint_whose_bytes_changed_at_its_path(tmp_path, cli):
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    first, second = (variant(seeds / f"digits-deit-seed{k}.safetensors", k + 1) for k in range(2))
    store = tmp_path / "s.sqlite"
    with pytest.raises(KeyboardInterrupt):  # stopped after its first unit, as Ctrl-C stops it
        evaluate_full(models=["digits-deit"], checkpoints={"digits-deit": [str(first), str(second)]}, n_examples=10,
                      batch_size=5, attacks="fgsm", threads=1, store=str(store), reporter=StopAfter(1))  # fmt: skip
    kept = second.read_bytes()
    variant(second, 9)  # other weights at the same path
    before = digest(tmp_path)
    resume = [
        "run",
        "-m",
        "digits-deit",
        "-c",
        f"digits-deit={first},{second}",
        *QUICK,
        "--store",
        str(store),
        "--resume",
    ]
    refused = cli(*resume)
    assert one_line_error(refused, "--resume", "checkpoint of digits-deit member 2", str(second), "changed since"), (
        refused.stderr
    )
    assert digest(tmp_path) == before  # no unit, no holder, no -wal/-shm: the store as it was
    second.write_bytes(kept)  # the weights it started with: it resumes
    resumed = cli(*resume)
    assert resumed.returncode == 0, resumed.stderr


def test_a_resume_refuses_a_model_whose_imported_helper_changed(tmp_path, cli, monkeypatch):
    helper = f"helper_{uuid.uuid4().hex[:8]}"  # a module name no other test of this process imported
    code = tmp_path / "code"
    code.mkdir()
    (code / f"{helper}.py").write_text("SCALE = 1.0\n")
    (code / "mine.py").write_text(
        f"import torch\nimport robeval\nfrom {helper} import SCALE\n\n\n"
        "class Net(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.body = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))\n\n"
        "    def forward(self, x):\n"
        "        return SCALE * self.body(x)\n\n\n"
        "def build():\n"
        "    return Net(), robeval.ModelConfig(input_size=(1, 8, 8))\n"
    )
    store = tmp_path / "s.sqlite"
    monkeypatch.chdir(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        evaluate_full(models=["code/mine.py:build"], n_examples=10, batch_size=5, attacks="fgsm", threads=1,
                      store=str(store), reporter=StopAfter(1))  # fmt: skip
    (code / f"{helper}.py").write_text("SCALE = 2.0\n")  # mine.py as it was; what it imports changed
    before = digest(tmp_path)
    resume = ["run", "-m", "code/mine.py:build", *QUICK, "--store", str(store), "--resume"]
    refused = cli(*resume)
    helper_file = str((code / f"{helper}.py").resolve())
    assert one_line_error(refused, "--resume", "code of model code/mine.py:build changed", helper_file), refused.stderr
    assert digest(tmp_path) == before
    (code / f"{helper}.py").write_text("SCALE = 1.0\n")
    resumed = cli(*resume)
    assert resumed.returncode == 0, resumed.stderr


# -- 7: the members of a model are that model's checkpoints, each its own ------------------------------


@pytest.fixture()
def seeds(tmp_path) -> Path:
    """Two members of digits-deit as train-demo names them, digits-deit-kde's (the same weight names and
    shapes: only the name it records tells it from one of digits-deit's), and a store with a run."""
    folder = tmp_path / "seeds"
    folder.mkdir()
    for k in range(2):
        variant(folder / f"digits-deit-seed{k}.safetensors", k + 1, recorded="digits-deit")
    variant(folder / "digits-deit-kde-seed0.safetensors", 5, "digits-deit-kde", recorded="digits-deit-kde")
    return folder


def refused_leaving_all_as_it_was(cli, folder: Path, checkpoint: str, *words: str) -> None:
    store = folder / "s.sqlite"
    if not store.exists():
        assert cli("run", "-m", "digits-deit", *QUICK, "--store", str(store)).returncode == 0
    before = digest(folder)
    result = cli("run", "-m", "digits-deit", "-c", checkpoint, *QUICK, "--store", str(store))
    assert one_line_error(result, *words), result.stderr
    assert digest(folder) == before  # no run stored, no -wal/-shm, no results folder


def test_a_member_that_records_another_model_is_refused_naming_the_file_and_both_names(tmp_path, seeds, cli):
    kde = seeds / "digits-deit-kde-seed0.safetensors"
    words = ["--checkpoint digits-deit", str(kde), "records model digits-deit-kde", "not digits-deit"]
    refused_leaving_all_as_it_was(cli, tmp_path, f"digits-deit={seeds}/digits-deit*.safetensors", *words)
    refused_leaving_all_as_it_was(cli, tmp_path, f"digits-deit={kde}", *words)  # one checkpoint alike
    trained = []  # training checkpoints (DeiT's, timm's) name the model in their own registry's names
    for k, name in enumerate(["deit_tiny_patch16_224", "deit_mahala_overlayers_tiny_patch16_224_wrapper"]):
        state = torch.load(variant(tmp_path / f"bare{k}.pt", k + 7), weights_only=True)
        torch.save({"model": state, "epoch": 299, "args": argparse.Namespace(model=name)}, seeds / f"checkpoint{k}.pth")
        trained.append(str(seeds / f"checkpoint{k}.pth"))
    words = ["record two models in their args.model", "deit_tiny_patch16_224", "deit_mahala_overlayers"]
    refused_leaving_all_as_it_was(cli, tmp_path, f"digits-deit={','.join(trained)}", *words)
    bare = variant(seeds / "bare.pt", 11)  # records no model
    unknown = f"digits-deit={seeds / 'digits-deit-seed0.safetensors'},{bare},{trained[0]}"
    result = cli("run", "-m", "digits-deit", "-c", unknown, *QUICK, "--store", str(tmp_path / "t.sqlite"))
    assert result.returncode == 0 and not result.stderr.strip(), result.stderr  # none records another model


def test_one_file_as_two_members_is_refused_however_it_is_named(tmp_path, seeds, cli):
    first = seeds / "digits-deit-seed0.safetensors"
    (seeds / "link.safetensors").symlink_to(first.name)
    os.link(first, seeds / "hard.safetensors")
    shutil.copyfile(first, seeds / "copy.safetensors")
    members = "digits-deit=seeds/digits-deit-seed0.safetensors,seeds/digits-deit-seed1.safetensors"
    refused_leaving_all_as_it_was(cli, tmp_path, f"{members},seeds/digits-deit-seed0.safetensors", "given twice")
    for spelling in ["./seeds/../seeds/digits-deit-seed0.safetensors", str(first), "seeds/link.safetensors",
                     "seeds/hard.safetensors"]:  # fmt: skip
        words = [spelling, "are one file, given twice", "each member is a checkpoint of its own"]
        refused_leaving_all_as_it_was(cli, tmp_path, f"{members},{spelling}", *words)
    refused_leaving_all_as_it_was(cli, tmp_path, f"{members},seeds/copy.safetensors", "copy.safetensors", "same bytes")

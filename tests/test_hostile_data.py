"""Data that is not what it seems (issue 52, items 5-7), through the command line as a user meets it:

* a resume whose checkpoint changed at its path, or whose model imports a helper that changed, is one
  line naming what changed, before anything is written;
* a run that ends while a reader holds the store open leaves every record in the store file itself, so
  that a copy of the file alone loses nothing (and where a reader pins them, says so in one line);
* members that hold another model's weights (by the name a checkpoint records) or one file twice (two
  spellings, a link, a copy of its bytes) are one line before anything is stored.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sqlite3
import threading
import time
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


# -- 6: the store file alone holds every record once a run ends ---------------------------------------


def stored_counts(path: Path, **how: str) -> dict[str, int]:
    """Records per run in the store file at ``path`` (``uri`` options: how to open it)."""
    query = "&".join(f"{k}={v}" for k, v in how.items())
    with sqlite3.connect(f"file:{path}?{query}", uri=True) as conn:
        return dict(conn.execute("SELECT run_id, COUNT(*) FROM records GROUP BY run_id").fetchall())


def reader_until(store: Path, status: str, runs: int) -> tuple[sqlite3.Connection, threading.Thread]:
    """A reader (as a browser of the store opens it) inside a read transaction begun now, which it ends
    once ``runs`` runs of the store are ``status``; the connection stays open."""
    reader = sqlite3.connect(f"file:{store}?mode=ro", uri=True, isolation_level=None, check_same_thread=False)
    reader.execute("BEGIN")
    reader.execute("SELECT COUNT(*) FROM records").fetchone()

    def end_when_done() -> None:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as watch:
            query = "SELECT COUNT(*) FROM runs WHERE status = ?"
            while watch.execute(query, (status,)).fetchone()[0] < runs:
                time.sleep(0.02)
        reader.execute("COMMIT")

    thread = threading.Thread(target=end_when_done, daemon=True)
    thread.start()
    return reader, thread


def copy_alone(store: Path, folder: Path) -> Path:
    folder.mkdir()
    return Path(shutil.copyfile(store, folder / store.name))  # the file, not its -wal


@pytest.mark.parametrize("ending", ["finished", "interrupted"])
def test_a_run_that_ends_while_a_reader_holds_the_store_is_whole_in_the_store_file(tmp_path, cli, ending):
    store = tmp_path / "s.sqlite"
    assert cli("run", "-m", "digits-deit", *QUICK, "--store", str(store)).returncode == 0
    reader, thread = reader_until(store, ending, 2 if ending == "finished" else 1)
    if ending == "finished":
        result = cli("run", "-m", "digits-deit-elliptical", *QUICK, "--store", str(store))
        assert result.returncode == 0 and not result.stderr.strip(), result.stderr
    else:
        with pytest.raises(KeyboardInterrupt):
            evaluate_full(models=["digits-deit-elliptical"], n_examples=10, batch_size=5, attacks="fgsm", threads=1,
                          store=str(store), reporter=StopAfter(1))  # fmt: skip
    thread.join()
    everything = stored_counts(store, mode="ro")  # the file and its journal
    assert len(everything) == 2
    assert stored_counts(copy_alone(store, tmp_path / "copy"), immutable="1") == everything
    reader.close()


def test_a_reader_that_never_lets_go_is_said_and_the_next_run_folds_the_records_in(tmp_path, cli, monkeypatch):
    """SQLite copies no record past a snapshot a reader still reads: the run waits for it (here 0.3 s),
    then says where the records are; the next run, once that reader ends, folds them in."""
    monkeypatch.setattr("robeval.store.JOURNAL_WAIT_SECONDS", 0.3)
    store = tmp_path / "s.sqlite"
    assert cli("run", "-m", "digits-deit", *QUICK, "--store", str(store)).returncode == 0
    reader = sqlite3.connect(f"file:{store}?mode=ro", uri=True, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT COUNT(*) FROM records").fetchone()
    pinned = cli("run", "-m", "digits-deit-elliptical", *QUICK, "--store", str(store))
    lines = [line for line in pinned.stderr.splitlines() if line.strip()]
    assert pinned.returncode == 0 and len(lines) == 1, pinned.stderr
    assert lines[0].startswith("warning:") and f"{store}-wal" in lines[0]
    assert len(stored_counts(store, mode="ro")) == 2  # safe: SQLite reads the journal with the file
    assert len(stored_counts(copy_alone(store, tmp_path / "pinned"), immutable="1")) == 1
    reader.execute("COMMIT")
    assert cli("run", "-m", "digits-deit-kde", *QUICK, "--store", str(store)).returncode == 0
    assert len(stored_counts(copy_alone(store, tmp_path / "after"), immutable="1")) == 3
    reader.close()


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
    from safetensors.torch import load_file

    resaved = {f"net.{k}": v for k, v in load_file(first).items()}  # as load_model(...).state_dict() names them
    torch.save(resaved, seeds / "resaved.pt")  # the same weights in other bytes
    refused_leaving_all_as_it_was(cli, tmp_path, f"{members},seeds/resaved.pt", "resaved.pt", "same weights")

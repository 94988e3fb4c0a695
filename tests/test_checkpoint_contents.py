"""What a checkpoint holds, read as a user would meet it (issue 60, items 3-5), through the command line:

* what a checkpoint says of itself (a training checkpoint's ``args``) is read within bounds: a list made of
  itself by pickle memo references (a "billion laughs", 400 MB as text) and a list nested 200,000 deep
  each run, their recipe shown shortened, in no more memory than a plain checkpoint;
* every tensor passes one admission rule (robeval.models.checkpoint.check_fit): a sparse, quantized or
  meta tensor, a complex one into real weights, an int8 one into float weights are one ``error:`` line
  naming the file and the tensor, before the store is touched, alone and as a member;
* a store whose recipe is not an object of short values is one line for ``check`` and ``report``.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sqlite3
import types
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file, save_file

import robeval

from .conftest import invoke, one_line_error
from .test_hostile_data import QUICK, digest, variant

ZOO = Path(robeval.__file__).parent / "zoo"
DEPTH = 200_000
CLEAR_REFS = Path("/proc/self/clear_refs")


def weights() -> dict[str, torch.Tensor]:
    return load_file(str(ZOO / "digits-deit.safetensors"))


def laughs(levels: int = 8) -> list:
    """A list holding one list ten times, ``levels`` deep: ten pickle memo references a level, 10**levels
    leaves as text."""
    found: list = [0]
    for _ in range(levels):
        found = [found] * 10
    return found


class Deep:
    """Pickled as a list nested :data:`DEPTH` deep (written as opcodes: pickling such a list recurses)."""


class DeepPickler(pickle._Pickler):  # type: ignore[name-defined]  # the Python pickler: its save can be extended
    def save(self, obj: Any, save_persistent_id: bool = True) -> None:
        if isinstance(obj, Deep):
            self.write(pickle.EMPTY_LIST * DEPTH + pickle.APPEND * (DEPTH - 1))
            return
        super().save(obj, save_persistent_id)


def training_checkpoint(path: Path, epochs: Any, lr: Any) -> Path:
    """digits-deit's weights as a DeiT training script saves them, its ``args.epochs`` and ``args.lr`` being
    ``epochs`` and ``lr``."""
    args = argparse.Namespace(model="deit_tiny_patch16_224", epochs=epochs, lr=lr, seed=0)
    module = types.SimpleNamespace(Pickler=DeepPickler, __name__="deep_pickle")
    torch.save({"model": weights(), "args": args}, path, pickle_module=module)
    return path


def run_peak(folder: Path, checkpoint: Path) -> tuple[Any, int]:
    """``robeval run`` of digits-deit with ``checkpoint``, and its peak resident memory above what was
    resident before it (kB)."""
    from robeval.core.machine import status_kb

    CLEAR_REFS.write_text("5")  # the peak resident memory (VmHWM) starts again from what is resident now
    resident = status_kb("VmRSS") or 0
    result = invoke(["run", "-m", "digits-deit", "-c", f"digits-deit={checkpoint}", *QUICK, "--store", "s.sqlite",
                     "--out", checkpoint.stem], folder)  # fmt: skip
    return result, (status_kb("VmHWM") or 0) - resident


def stored_recipe(folder: Path) -> dict[str, str]:
    with sqlite3.connect(folder / "s.sqlite") as db:
        info = json.loads(db.execute("SELECT info FROM runs ORDER BY rowid DESC").fetchone()[0])
    return info["models"]["digits-deit"]["recipe"]


# -- 3: what a checkpoint says of itself is read bounded ----------------------------------------------------


@pytest.mark.skipif(not CLEAR_REFS.exists(), reason="no /proc/self/clear_refs to reset the peak memory (Linux only)")
def test_a_billion_laughs_and_a_list_200000_deep_in_args_run_in_a_plain_checkpoints_memory_shown_short(tmp_path):
    plain, plain_peak = run_peak(tmp_path, training_checkpoint(tmp_path / "plain.pth", 300, 5e-4))
    assert plain.returncode == 0, plain.stderr
    result, peak = run_peak(tmp_path, training_checkpoint(tmp_path / "hostile.pth", laughs(), Deep()))
    assert result.returncode == 0 and not result.stderr.strip(), result.stderr
    assert peak - plain_peak < 100 * 1024, (peak, plain_peak)  # kB; str() of the laughs: 300 MB of text
    shown = stored_recipe(tmp_path)  # str() of the deep list: RecursionError
    assert shown["epochs"].startswith("[[[[...], [...],") and len(shown["epochs"]) <= 200
    assert shown["lr"] == "[[[[...]]]]"


def test_a_recipes_values_are_read_as_their_fields_types_and_anything_else_bounded():
    from robeval.models.recipes import _text

    assert _text(300, int) == "300" and _text(5e-4, (int, float)) == "0.0005" and _text("cosine") == "cosine"
    assert _text("300", int) == "'300'"  # a text where a number belongs shows as a text
    assert _text(10**5000, int) == "<int of 16610 bits>"  # its digits would be 5,000 (Python refuses 4,300)
    assert _text(argparse.Namespace(a=laughs()), int) == "<Namespace>"
    assert _text(b"x" * 10**6, int).endswith("...") and len(_text("x" * 10**6)) == 200


# -- 4: every tensor passes one admission rule ----------------------------------------------------------------

NAME = "head.weight"
ODD = {
    "sparse": (lambda w: w.to_sparse(), "a sparse_coo tensor, not a dense one"),
    "complex": (lambda w: w.to(torch.complex64), "a tensor of complex numbers (torch.complex64)"),
    "int8": (lambda w: (w * 100).to(torch.int8), "a tensor of integers (torch.int8)"),
    "quantized": (lambda w: torch.quantize_per_tensor(w, 0.01, 0, torch.qint8), "a quantized tensor (torch.qint8)"),
    "meta": (lambda w: torch.empty(w.shape, device="meta"), "a meta tensor"),
}


def odd_checkpoint(path: Path, kind: str) -> Path:
    state = weights()
    with warnings.catch_warnings():  # torch deprecates making quantized tensors
        warnings.simplefilter("ignore")
        state[NAME] = ODD[kind][0](state[NAME])
    torch.save(state, path)
    return path


def refused(folder: Path, checkpoints: str, *words: str) -> None:
    """``robeval run`` with ``checkpoints`` is one line naming ``words``; every file of ``folder`` (a store with
    a run among them) as it was, none created."""
    store = folder / "s.sqlite"
    if not store.exists():
        assert invoke(["run", "-m", "digits-deit", *QUICK, "--store", str(store)], folder).returncode == 0
    before = digest(folder)
    result = invoke(
        ["run", "-m", "digits-deit", "-c", checkpoints, *QUICK, "--store", str(store), "--out", "o"], folder
    )
    assert one_line_error(result, *words), result.stderr
    assert digest(folder) == before


@pytest.mark.parametrize("kind", list(ODD))
def test_a_tensor_of_another_form_or_kind_is_one_line_alone_and_as_a_member(tmp_path, kind):
    odd = odd_checkpoint(tmp_path / f"{kind}.pth", kind)
    words = [f"checkpoint {odd}", f"tensor {NAME} is {ODD[kind][1]}", "digits-deit holds a dense tensor of "
             "floating-point numbers (torch.float32)"]  # fmt: skip
    refused(tmp_path, f"digits-deit={odd}", *words)
    member = variant(tmp_path / "member.safetensors", 1)
    refused(tmp_path, f"digits-deit={member},{odd}", *words)  # its weights hashed: admitted first


def test_names_that_are_no_texts_are_one_short_line(tmp_path):
    """A tensor named by a number (``name.startswith``: AttributeError), and a key that is a tuple of itself ten
    times over, nested (``str`` of it: 70 MB, in the message that lists the keys)."""
    state: dict[Any, torch.Tensor] = weights()
    state[0] = state.pop(NAME)
    torch.save(state, tmp_path / "number.pth")
    refused(tmp_path, f"digits-deit={tmp_path / 'number.pth'}", "is not a bare state dict (tensors named by texts)")
    nested: tuple = ("a",)
    for _ in range(7):  # (hashed whole as a dict key: on every load, 10**7 leaves)
        nested = (nested,) * 10
    torch.save({nested: weights(), "epoch": 3}, tmp_path / "tuple.pth")
    refused(tmp_path, f"digits-deit={tmp_path / 'tuple.pth'}", "keys: <tuple>, epoch (choose one")


def test_a_safetensors_files_dtypes_are_admitted_from_its_header(tmp_path):
    state = weights()
    state[NAME] = (state[NAME] * 100).to(torch.int8)
    save_file(state, str(tmp_path / "int8.safetensors"))
    refused(tmp_path, f"digits-deit={tmp_path / 'int8.safetensors'}", "tensor head.weight is a tensor of integers")


def test_weights_of_another_precision_load(tmp_path):
    state = {k: v.to(torch.bfloat16) for k, v in weights().items()}
    torch.save(state, tmp_path / "bf16.pth")
    result = invoke(["run", "-m", "digits-deit", "-c", f"digits-deit={tmp_path / 'bf16.pth'}", *QUICK, "--store",
                     "s.sqlite"], tmp_path)  # fmt: skip
    assert result.returncode == 0 and not result.stderr.strip(), result.stderr


# -- 5: a stored recipe of the wrong shape ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("recipe")
    robeval.evaluate_full(models=["digits-deit"], n_examples=4, attacks="fgsm", store=str(folder / "s.sqlite"),
                          progress=False)  # fmt: skip
    return folder / "s.sqlite"


@pytest.mark.parametrize("recipe", ["abc", ["epochs", 300], 5, {"epochs": ["a"] * 5}])
def test_a_stored_recipe_that_is_no_object_of_short_values_is_one_line_for_check_and_report(tmp_path, stored, recipe):
    store = tmp_path / "s.sqlite"
    store.write_bytes(stored.read_bytes())
    with sqlite3.connect(store) as db:
        info = json.loads(db.execute("SELECT info FROM runs").fetchone()[0])
        info["models"]["digits-deit"]["recipe"] = recipe
        db.execute("UPDATE runs SET info = ?", (json.dumps(info),))
    db.close()
    before = digest(tmp_path)
    for args in (["check"], ["report", "--out", "r.html", "--gallery-size", "0"]):
        result = invoke([*args, "--store", str(store)], tmp_path)
        assert one_line_error(result, "training recipe of member 1 of digits-deit", "not an object"), result.stderr
    assert digest(tmp_path) == before

"""Every checkpoint layout a user brings, safe loading, and the messages for ones that do not fit."""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

import robeval
from robeval.core.errors import UserError
from robeval.models import build_network
from robeval.store import Store

from .conftest import run_cli
from .reference_runs import bitwise_equal

MODEL = "digits-deit"


@pytest.fixture(scope="module")
def state():
    torch.manual_seed(1)
    return build_network(MODEL).state_dict()


def _same_weights(model, state) -> bool:
    own = model.net.state_dict()
    return all(torch.equal(own[k], state[k]) for k in state)


@pytest.mark.parametrize("layout", ["bare", "model", "model_ema", "state_dict", "module_prefix", "training"])
def test_layouts_load(tmp_path, state, layout):
    prefixed = {f"module.{k}": v for k, v in state.items()}
    payload = {
        "bare": state,
        "model": {"model": state, "epoch": 3},
        "model_ema": {"model_ema": state},
        "state_dict": {"state_dict": prefixed},
        "module_prefix": prefixed,
        # the authors' training checkpoints: args is an argparse.Namespace, plus optimizer state
        "training": {"model": prefixed, "optimizer": {"state": {}, "param_groups": [{"lr": 0.1, "params": [0, 1]}]},
                     "epoch": 299, "args": argparse.Namespace(model="deit_tiny", lr=5e-4, data_path="/data", M_positions=[1, 2])},
    }[layout]
    path = tmp_path / "ckpt.pth"
    torch.save(payload, path)
    model = robeval.load_model(MODEL, checkpoint=path)
    assert _same_weights(model, state)
    assert model.meta.checkpoint_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_safetensors_and_key_choice(tmp_path, state):
    path = tmp_path / "w.safetensors"
    save_file({k: v.contiguous() for k, v in state.items()}, str(path))
    assert _same_weights(robeval.load_model(MODEL, checkpoint=path), state)
    other = {k: torch.zeros_like(v) for k, v in state.items()}
    both = tmp_path / "both.pth"
    torch.save({"model": other, "model_ema": state}, both)
    assert _same_weights(robeval.load_model(MODEL, checkpoint=both, checkpoint_key="model_ema"), state)
    assert _same_weights(robeval.load_model(MODEL, checkpoint=both), other)  # "model" is the default
    with pytest.raises(UserError, match="no key 'ema'"):
        robeval.load_model(MODEL, checkpoint=both, checkpoint_key="ema")


def hostile_checkpoint(tmp_path: Path) -> tuple[Path, Path]:
    """A checkpoint whose unpickling would create ``marker`` (code in the file), and that marker."""
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            import os
            return (os.system, (f"touch {marker}",))

    path = tmp_path / "evil.pth"
    torch.save({"model": Evil()}, path)
    return path, marker


def test_code_in_pickle_is_not_run(tmp_path):
    path, marker = hostile_checkpoint(tmp_path)
    with pytest.raises(UserError, match="cannot be loaded safely"):
        robeval.load_model(MODEL, checkpoint=path)
    assert not marker.exists()


def test_other_size_fails_with_cause(tmp_path, deit_tiny_ckpt):
    with pytest.raises(UserError) as info:
        robeval.load_model("deit-small", checkpoint=deit_tiny_ckpt)
    message = str(info.value)
    assert "does not fit deit-small" in message and "another model size" in message
    assert "\n" not in message


def test_other_architecture_fails_with_cause(tmp_path, deit_tiny_ckpt):
    with pytest.raises(UserError, match="another (architecture|model size)"):
        robeval.load_model(MODEL, checkpoint=deit_tiny_ckpt)


def _not_checkpoints(state: dict) -> dict[str, bytes]:
    """Files a user may pass by mistake, each under a checkpoint-like name."""
    import io

    from safetensors.torch import save

    zipped = io.BytesIO()
    torch.save({"model": state}, zipped)
    full_safetensors = save(state)
    return {
        "text.pth": b"hello this is text\n", "table.pth": b"a,b,c\n1,2,3\n", "random.pth": bytes(range(7, 256)) * 16,
        "empty.pth": b"", "truncated-zip.pth": zipped.getvalue()[: len(zipped.getvalue()) // 2],
        "truncated.safetensors": full_safetensors[: len(full_safetensors) // 2],
        "text.safetensors": b"not tensors\n",
    }


def test_files_that_are_no_checkpoint_get_one_line(tmp_path, state):
    """Text, CSV, random bytes, empty, truncated zip and safetensors: one line, exit 2, no --trust-checkpoint advice."""
    for name, content in _not_checkpoints(state).items():
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(UserError, match="^not a PyTorch/safetensors checkpoint: ") as info:
            robeval.load_model(MODEL, checkpoint=path)
        assert "--trust-checkpoint" not in str(info.value) and "\n" not in str(info.value), name
    proc = run_cli("run", "-m", MODEL, "--checkpoint", str(tmp_path / "text.pth"), "-n", "8", "--attacks", "fgsm",
                   "--quiet", "--store", str(tmp_path / "s.sqlite"))
    assert proc.returncode == 2 and proc.stderr.startswith("error: not a PyTorch/safetensors checkpoint")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_truncated_file(tmp_path, state):
    path = tmp_path / "full.pth"
    torch.save(state, path)
    cut = tmp_path / "cut.pth"
    cut.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(UserError, match="truncated|not a"):
        robeval.load_model(MODEL, checkpoint=cut)


def test_missing_file_and_no_weights():
    with pytest.raises(UserError, match="not found"):
        robeval.load_model(MODEL, checkpoint="/nonexistent/ckpt.pth")
    with pytest.raises(UserError, match="--checkpoint"):
        robeval.load_model("deit-tiny-elliptical")


def test_unknown_model_suggests():
    with pytest.raises(UserError, match="did you mean deit-small"):
        robeval.load_model("deit-smal")


def test_a_saved_load_model_state_dict_loads_back(tmp_path):
    import robeval

    model = robeval.load_model("digits-deit")
    torch.save(model.state_dict(), tmp_path / "own.pth")  # keys of robeval's wrapper: net.*
    again = robeval.load_model("digits-deit", checkpoint=tmp_path / "own.pth")
    x = torch.rand(4, 1, 8, 8)
    assert torch.equal(model(x), again(x))


def test_hostile_pickle_is_refused_from_the_cli(tmp_path):
    ckpt, marker = hostile_checkpoint(tmp_path)
    proc = run_cli("run", "-m", "digits-deit", "--checkpoint", str(ckpt), "--quiet", "--store", str(tmp_path / "s.sqlite"))
    assert proc.returncode == 2 and "cannot be loaded safely" in proc.stderr and "--trust-checkpoint" in proc.stderr
    assert not marker.exists()


def test_trust_checkpoint_warns(tmp_path):
    ckpt = tmp_path / "plain.pth"
    torch.save({"model": build_network("digits-deit").state_dict(), "note": Store}, ckpt)  # a class: not plain data
    refused = run_cli("run", "-m", "digits-deit", "--checkpoint", str(ckpt), "-n", "10", "--attacks", "fgsm", "--quiet",
                      "--store", str(tmp_path / "s.sqlite"), "--out", str(tmp_path / "o"))
    assert refused.returncode == 2
    trusted = run_cli("run", "-m", "digits-deit", "--checkpoint", str(ckpt), "-n", "10", "--attacks", "fgsm", "--quiet",
                      "--trust-checkpoint", "--store", str(tmp_path / "s.sqlite"), "--out", str(tmp_path / "o"))
    assert trusted.returncode == 0 and "warning: --trust-checkpoint" in trusted.stderr


def test_a_checkpoint_rewritten_after_the_run_read_it_is_evaluated_as_the_bytes_it_hashed(tmp_path, state, monkeypatch):
    """The run reads a checkpoint once, at admission: the weights it evaluates are the bytes whose SHA-256 it
    records, even when another job writes over the file before the model loads."""
    import robeval.evaluation.plan as plan

    path, other = tmp_path / "w.pth", {k: torch.zeros_like(v) for k, v in state.items()}
    torch.save(state, path)
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    options = dict(models=[MODEL], checkpoints={MODEL: str(path)}, n_examples=8, attacks="fgsm", progress=False)
    alone = robeval.evaluate_full(**options).records
    real_load = plan.load_model

    def rewritten_first(*args, **kwargs):
        torch.save(other, path)
        return real_load(*args, **kwargs)

    monkeypatch.setattr(plan, "load_model", rewritten_first)
    run = robeval.evaluate_full(**options)
    assert hashlib.sha256(path.read_bytes()).hexdigest() != sha  # written over before the load
    assert run.info["models"][MODEL]["checkpoint_sha256"] == sha
    assert bitwise_equal(run.records.drop(columns="run_id"), alone.drop(columns="run_id")) is None


def test_a_run_holds_a_checkpoints_tensors_only_until_its_last_load_of_them(tmp_path, state):
    """The plan keeps what each checkpoint records (its path, SHA-256, recipe) for the run's records and drops
    its tensors once the run's last load of the file has loaded them: under --adaptive a member is loaded
    twice (the model, then ``<model>+adaptive``), so only the second load releases them."""
    from robeval.evaluation.config import make_config
    from robeval.evaluation.plan import make_plan

    model = "digits-deit-elliptical"
    paths = [tmp_path / f"m{i}.pth" for i in range(2)]
    for i, path in enumerate(paths):
        torch.save({k: v + i for k, v in state.items()}, path)
    config = make_config(models=[model], checkpoints={model: [str(p) for p in paths]}, n_examples=8,
                         attacks="pgd", adaptive=True)  # fmt: skip
    plan = make_plan(config)
    plain, adaptive = plan.jobs
    for member in plain.members:
        opened = plan.opened(str(member.checkpoint))
        loaded = plan.load(plain, member)
        assert _same_weights(loaded, opened.state) and len(opened.state) == len(state)  # the adaptive job's too
    for member in adaptive.members:
        opened = plan.opened(str(member.checkpoint))
        plan.load(adaptive, member)
        assert opened.state == {} and opened.sha256 == hashlib.sha256(Path(opened.path).read_bytes()).hexdigest()

"""A researcher's own network, first-class: ``--model PATH.py:CALLABLE`` and ``PKG.MODULE:CALLABLE`` on the
command line, ``nn.Module`` s in ``robeval.evaluate``, the same records either way, every mistake one
line before any attack runs and before the store is written, and the commands that read stored runs
(table, compare, check, report, resume) treating such a model like any other."""

from __future__ import annotations

import json
import re
import textwrap

import pandas as pd
import pytest
import torch

import robeval
from robeval.core.errors import UserError
from tests.conftest import one_line_error

NET = '''
import torch
from torch import nn

import robeval


class TinyNet(nn.Module):
    """A two-layer network on 8x8 digits, {width} hidden units."""

    def __init__(self, classes=10):
        super().__init__()
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(64, {width}), nn.ReLU(), nn.Linear({width}, classes))

    def forward(self, x):
        return self.body(x)


def build():
    """TinyNet, with what robeval needs to know stated alongside it."""
    return TinyNet(), robeval.ModelConfig(input_size=(1, 8, 8), num_classes=10)


def with_cfg():
    net = TinyNet()
    net.pretrained_cfg = {{"input_size": (1, 8, 8), "num_classes": 10, "mean": (0.5,), "std": (0.5,)}}
    return net


def unsized():
    return TinyNet()


def wide_head():
    return TinyNet(classes=1000), robeval.ModelConfig(input_size=(1, 8, 8))


def states_100():
    return TinyNet(), robeval.ModelConfig(input_size=(1, 8, 8), num_classes=100)


def wrong_size():
    return TinyNet(), robeval.ModelConfig(input_size=(3, 32, 32))


def no_module():
    return 42


def tuple_out():
    class Twice(TinyNet):
        def forward(self, x):
            return self.body(x), self.body(x)

    return Twice(), robeval.ModelConfig(input_size=(1, 8, 8))


def raises():
    raise RuntimeError("out of coffee")


CONSTANT = 3
instance = TinyNet()
instance.pretrained_cfg = {{"input_size": (1, 8, 8), "num_classes": 10}}
'''


def write_net(folder, name="mynet.py", width=32):
    path = folder / name
    path.write_text(NET.format(width=width))
    return path


@pytest.fixture()
def net_file(tmp_path):
    write_net(tmp_path)
    return tmp_path


ATTACKS = "fgsm,pgd"
KEYS = ["attack", "eps", "example", "label", "clean_top1", "adv_top1", "adv_top5", "adv_pred", "linf"]


def test_a_file_model_runs_from_the_command_line_and_as_a_module_gives_the_same_records(net_file, cli):
    store = net_file / "s.sqlite"
    result = cli("run", "--model", "./mynet.py:build", "-n", "16", "--attacks", ATTACKS, "--store", str(store), "-q")
    assert result.returncode == 0, result.stderr
    assert "./mynet.py:build" in result.stdout and "pgd" in result.stdout
    from robeval.results.runs import load_run
    from robeval.store import Store

    stored = load_run(Store(store), Store(store).runs()["id"].iloc[-1])
    meta = stored.info["models"]["./mynet.py:build"]
    assert meta["source"] == "./mynet.py:build" and meta["params"] == 64 * 32 + 32 + 32 * 10 + 10
    import sys

    sys.path.insert(0, str(net_file))
    try:
        import mynet  # the same file, imported as the user would
    finally:
        sys.path.remove(str(net_file))
    torch.manual_seed(0)  # the run builds the network under its --seed (0)
    module = mynet.build()
    again = robeval.evaluate_full(models=[module], n_examples=16, attacks=ATTACKS, device="cpu")
    [name] = again.info["config"]["models"]
    assert name.startswith("module:TinyNet@")
    ours = stored.records[KEYS].sort_values(["attack", "example"], ignore_index=True)
    theirs = again.records[KEYS].sort_values(["attack", "example"], ignore_index=True)
    pd.testing.assert_frame_equal(ours, theirs, check_dtype=False)
    assert again.info["models"][name]["checkpoint_sha256"] == meta["checkpoint_sha256"]  # the same weights


def test_names_references_and_modules_go_in_one_list(net_file, monkeypatch):
    monkeypatch.chdir(net_file)
    module = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
    module.pretrained_cfg = {"input_size": (1, 8, 8), "num_classes": 10}
    result = robeval.evaluate_full(models=["digits-deit", "./mynet.py:with_cfg=mine", module, "mynet:build"],
                                   n_examples=8, attacks="fgsm", device="cpu")  # fmt: skip
    models = list(dict.fromkeys(result.summary["model"]))
    assert models[:2] == ["digits-deit", "mine"] and models[2].startswith("module:Sequential@")
    assert models[3] == "mynet:build"
    assert result.info["models"]["mine"]["mean"] == [0.5] and result.info["models"]["mynet:build"]["mean"] == [0.0]
    assert module.training and all(p.requires_grad for p in module.parameters())  # the caller's is left alone


@pytest.mark.parametrize(
    "reference, words",
    [
        ("./missing.py:build", ["model file not found", "missing.py"]),
        ("./mynet.py", ["name the callable in it", "as PATH.py:CALLABLE", "./mynet.py:build"]),
        ("./broken.py:build", ["broken.py raised NameError", "on import"]),
        ("no_such_package.nets:build", ["cannot import no_such_package.nets", "No module named"]),
        ("./mynet.py:absent", ["has no attribute 'absent'"]),
        ("./mynet.py:CONSTANT", ["is a int, not a callable"]),
        ("./mynet.py:no_module", ["returned a int, not a torch.nn.Module"]),
        ("./mynet.py:raises", ["./mynet.py:raises() raised RuntimeError: out of coffee"]),
        ("./mynet.py:unsized", ["does not say its input_size", "robeval.ModelConfig(input_size=...)",
                                "--model-config ./mynet.py:unsized.input_size="]),
        ("./mynet.py:wrong_size", ["fails on a zero batch of its stated input size (3, 32, 32)"]),
        ("./mynet.py:tuple_out", ["returns a tuple, not a tensor of logits"]),
        ("./mynet.py:states_100", ["states num_classes=100 but returns 10 logits"]),
        ("./mynet.py:wide_head", ["data digits has labels of 10 classes", "has 1000 classes"]),
    ],
)
def test_every_mistake_in_the_users_code_is_one_line_before_the_store_is_written(net_file, cli, reference, words):
    (net_file / "broken.py").write_text("import torch\nundefined_name\n")
    store = net_file / "s.sqlite"
    result = cli("run", "--model", reference, "-n", "8", "--attacks", "fgsm", "--store", str(store), "-q")
    assert one_line_error(result, *words), result.stderr
    assert not store.exists() and not (net_file / "results").exists()


def test_what_the_code_does_not_say_can_be_given_as_options(net_file, cli):
    result = cli("run", "--model", "./mynet.py:unsized=tiny", "--model-config", "tiny.input_size=1,8,8",
                 "--model-config", "tiny.num_classes=10", "-n", "8", "--attacks", "fgsm", "--store",
                 str(net_file / "s.sqlite"), "-q")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert one_line_error(cli("run", "--model-config", "input_size=1,8,8", "-n", "4"), "with several models")
    assert one_line_error(cli("run", "--model", "digits-deit", "--model-config", "num_classes=10", "-n", "4",
                              "--store", str(net_file / "t.sqlite")), "digits-deit's are its registration's")  # fmt: skip


def test_modules_from_python_are_checked_like_the_users_code():
    bare = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
    with pytest.raises(UserError, match="does not say its input_size") as info:
        robeval.evaluate(models=[bare], n_examples=4, attacks="fgsm")
    assert "\n" not in str(info.value) and "give (module, robeval.ModelConfig(input_size=...))" in str(info.value)
    wide = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 1000))
    with pytest.raises(UserError, match="has 1000 classes"):
        robeval.evaluate(models=[(wide, robeval.ModelConfig(input_size=(1, 8, 8)))], n_examples=4, attacks="fgsm")
    with pytest.raises(UserError, match="not a object"):
        robeval.evaluate(models=[object()], n_examples=4, attacks="fgsm")


def test_a_ten_class_module_on_cifar100_is_refused_before_the_store_is_written(tmp_path):
    from tests.published_files import cifar100_python

    cifar100_python(tmp_path, n=120)
    store = tmp_path / "s.sqlite"
    module = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 32 * 32, 10))
    for n in (8, 100):
        with pytest.raises(UserError, match="states num_classes=100 but returns 10 logits"):
            robeval.benchmark(module, n_examples=n, dataset="cifar100", data_dir=str(tmp_path), device="cpu",
                              store=store)  # fmt: skip
    assert not store.exists()


def test_a_failing_run_with_run_id_in_out_leaves_no_folder(tmp_path):
    class NaNOffZero(torch.nn.Module):
        """Fine on the output check's zero batch, NaN on any image."""

        def __init__(self):
            super().__init__()
            self.head = torch.nn.Linear(64, 10)

        def forward(self, x):
            out = self.head(x.flatten(1))
            return out + (x.flatten(1).sum(1, keepdim=True) > 0) * float("nan")

    out = tmp_path / "results" / "mine-{run_id}"
    with pytest.raises(UserError, match="no model could be evaluated"):
        robeval.evaluate(models=[(NaNOffZero(), robeval.ModelConfig(input_size=(1, 8, 8)))], n_examples=4,
                         attacks="fgsm", out=out)  # fmt: skip
    assert list(tmp_path.iterdir()) == []


def test_stored_runs_of_the_users_code_resume_compare_check_and_report(net_file, cli, monkeypatch):
    from robeval.report.html_page import html_report
    from robeval.results.runs import load_run
    from robeval.store import Store

    monkeypatch.chdir(net_file)
    store = net_file / "s.sqlite"
    module = (torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10)), robeval.ModelConfig(input_size=(1, 8, 8)))
    options = dict(n_examples=8, attacks="pgd", device="cpu", store=store)
    first = robeval.evaluate_full(models=["./mynet.py:build=mine", module, "digits-deit"], **options)
    run_id = first.run_id
    Store(store).update_run(run_id, status="interrupted")
    again = robeval.evaluate_full(models=["./mynet.py:build=mine", module, "digits-deit"], resume="latest", **options)
    assert again.run_id == run_id  # the same callable, the same weights: the same run
    assert cli("compare", f"{run_id}:mine", f"{run_id}:digits-deit", "--store", str(store)).returncode == 0
    assert cli("compare", "mine", "digits-deit", "--store", str(store)).returncode == 0
    assert cli("check", run_id, "--store", str(store)).returncode == 0
    page = html_report(Store(store), [load_run(Store(store), run_id)], gallery_size=2, code=("./mynet.py:build=mine",))
    efficiency = page[page.index('id="efficiency"') : page.index('id="compare"')]
    module_name = first.info["config"]["models"][1]
    assert "mine" in efficiency and module_name in efficiency and "digits-deit" in efficiency
    gallery = page[page.index('id="gallery"') :]
    assert "Gallery: mine, digits-deit under pgd" in gallery and "regenerated predictions equal" in gallery


def test_the_identity_names_the_callable_and_its_weights(net_file, monkeypatch):
    from robeval.evaluation.config import make_config
    from robeval.evaluation.plan import make_plan

    monkeypatch.chdir(net_file)
    identity = make_plan(make_config(models=["./mynet.py:build=mine"])).identity()
    given = identity["given_models"]["mine"]
    assert identity["references"] == {"mine": "./mynet.py:build"} and given["source"] == "./mynet.py:build"
    assert len(given["weights_sha256"]) == 64 and given["config"]["input_size"] == (1, 8, 8)
    other_seed = make_plan(make_config(models=["./mynet.py:build=mine"], seed=1)).identity()["given_models"]["mine"]
    assert other_seed["weights_sha256"] != given["weights_sha256"]
    plain = make_plan(make_config(models=["digits-deit"])).identity()
    assert "given_models" not in plain and "references" not in plain  # as runs were stored before


def test_a_checkpoint_applies_to_the_users_code(net_file, cli):
    import sys

    sys.path.insert(0, str(net_file))
    try:
        import mynet
    finally:
        sys.path.remove(str(net_file))
    torch.manual_seed(5)
    trained, _ = mynet.build()
    torch.save(trained.state_dict(), net_file / "w.pth")
    torch.save({f"inner.{k}": v for k, v in trained.state_dict().items()}, net_file / "prefixed.pth")
    store = net_file / "s.sqlite"
    ok = cli("run", "--model", "./mynet.py:build=mine", "--checkpoint", "mine=w.pth", "-n", "8", "--attacks", "fgsm",
             "--store", str(store), "-q")  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    info = json.loads(next((net_file / "results").glob("*/run.json")).read_text())
    assert info["models"]["mine"]["weights"] == "checkpoint w.pth"
    assert info["config"]["checkpoints"] == {"mine": "w.pth"}
    bad = cli("run", "--model", "./mynet.py:build=mine", "--checkpoint", "mine=prefixed.pth", "-n", "8",
              "--attacks", "fgsm", "--store", str(net_file / "t.sqlite"), "-q")  # fmt: skip
    assert one_line_error(bad, "extra prefix 'inner.'")


def test_a_package_module_reference_and_a_module_level_instance(tmp_path, cli):
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    write_net(package, "nets.py")
    result = cli("run", "--model", "mypkg.nets:build", "--model", "mypkg.nets:instance", "-n", "8", "--attacks",
                 "fgsm", "--store", str(tmp_path / "s.sqlite"), "-q")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "mypkg.nets:build" in result.stdout and "mypkg.nets:instance" in result.stdout


def test_load_model_and_train_demo_take_the_users_code(net_file, monkeypatch):
    from robeval.models.training import train_demo

    monkeypatch.chdir(net_file)
    model = robeval.load_model("./mynet.py:build")
    assert model.meta.input_size == (1, 8, 8) and model(torch.rand(2, 1, 8, 8)).shape == (2, 10)
    torch.set_num_threads(1)  # as train-demo trains (a busy machine slows tiny models' threads down)
    net_a, acc_a = train_demo("./mynet.py:build", epochs=2, seed=3)
    net_b, acc_b = train_demo("./mynet.py:build", epochs=2, seed=3)
    assert acc_a == acc_b and all(torch.equal(a, b) for a, b in zip(net_a.state_dict().values(),
                                                                      net_b.state_dict().values()))  # fmt: skip
    with pytest.raises(UserError, match="digits-sized models"):
        train_demo("cifar10-vit", epochs=1)


def test_train_demo_writes_weights_that_run_loads(tmp_path, cli):
    out = tmp_path / "kde.safetensors"
    result = cli("train-demo", "--model", "digits-deit-kde", "--out", str(out), "--epochs", "6", "--lr", "5e-3", "--seed", "1")
    assert result.returncode == 0, result.stderr
    assert "digits-deit-kde: clean accuracy" in result.stdout and out.stat().st_size > 10_000
    run = cli("run", "--model", "digits-deit-kde", "--checkpoint", f"digits-deit-kde={out}", "-n", "8", "--attacks",
              "fgsm", "--store", str(tmp_path / "s.sqlite"), "-q")  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert one_line_error(cli("train-demo", "--model", "deit-tiny", "--out", str(tmp_path / "x.pth"), "--epochs", "1"),
                          "digits-sized models")  # fmt: skip
    assert one_line_error(cli("train-demo", "--model", "digits-deit", "--out", str(tmp_path / "x.txt")), "*.safetensors")


def test_the_torch_free_check_of_a_run_knows_the_file_and_the_models_registered_from_python(tmp_path, cli):
    from robeval.models import register_model
    from robeval.models.catalog import DIGITS
    from robeval.models.registry import MODELS
    from robeval.models.vits import digits_vit
    from robeval.models.weights import NO_WEIGHTS

    assert one_line_error(cli("run", "--model", "./nowhere.py:build"), "model file not found: nowhere.py")
    register_model("toy-from-python", family="toy", weights=NO_WEIGHTS, config=DIGITS, description="a toy")(digits_vit)
    try:
        result = cli("run", "--model", "toy-from-python", "--weights", "random", "-n", "4", "--attacks", "fgsm",
                     "--store", str(tmp_path / "s.sqlite"), "-q")  # fmt: skip
        assert result.returncode == 0, result.stderr
    finally:
        MODELS.remove("toy-from-python")


def test_the_reference_syntax_is_told_apart_from_names(tmp_path):
    from robeval.models.registry import PREFIXES
    from robeval.references import PREFIX_NAMES, is_reference, split_label

    assert set(PREFIX_NAMES) == set(PREFIXES)  # the torch-free copy of the registry's prefixes
    for name in ("./x.py:build", "x.py:build", "/abs/x.py:make.model", "pkg.mod:build", "pkg:Factory.create"):
        assert is_reference(name), name
    for name in ("digits-deit", "timm:deit_tiny_patch16_224", "hf-hub:a/b", "robustbench:x", "module:X@ab",
                 "20261201-225830-026825:digits-deit", "pkg.mod:", "a b:c"):
        assert not is_reference(name), name
    assert split_label("./x.py:build=mine") == ("./x.py:build", "mine")
    assert split_label("digits-deit") == ("digits-deit", None)
    with pytest.raises(UserError, match="REFERENCE=NAME"):
        split_label("./x.py:build=")
    with pytest.raises(UserError, match=r"as PATH.py:CALLABLE \(for example nets/x.py:build\)"):
        robeval.load_model("nets/x.py=mine")  # the library says it too


def test_two_models_named_alike_are_refused(net_file, monkeypatch):
    monkeypatch.chdir(net_file)
    with pytest.raises(UserError, match="'mine' is the name of both './mynet.py:build=mine' and './mynet.py:with_cfg=mine'"):
        robeval.evaluate(models=["./mynet.py:build=mine", "./mynet.py:with_cfg=mine"], n_examples=4)


def test_reproduce_column_runs_find_runs_of_the_users_code(net_file, monkeypatch):
    from robeval.reproduce.column_runs import newest_matching_run

    monkeypatch.chdir(net_file)
    store = net_file / "s.sqlite"
    options = dict(models=["./mynet.py:build=mine"], n_examples=8, attacks="none", data="digits")
    run = robeval.evaluate_full(store=store, device="cpu", **options)
    assert newest_matching_run(store, options) == run.run_id
    assert newest_matching_run(store, {**options, "seed": 1}) is None  # other weights: not that run


def test_the_model_config_is_parsed_in_one_line():
    from robeval.model_config import ModelConfig, parse_model_config

    assert parse_model_config(["input_size=1x8x8", "mean=0.5"], ["m"]) == {"m": {"input_size": (1, 8, 8),
                                                                             "mean": (0.5,)}}  # fmt: skip
    for item, words in (("m.size=3", "KEY one of"), ("m.input_size=1,8", "three positive"),
                        ("m.num_classes=2.5", "positive whole"), ("m.crop_pct=2", "fraction")):  # fmt: skip
        with pytest.raises(UserError, match=words):
            parse_model_config([item], ["m"])
    config = ModelConfig(input_size=(3, 32, 32)).completed(100)
    assert (config.num_classes, config.mean, config.std) == (100, (0.0,) * 3, (1.0,) * 3)


def test_robeval_model_config_needs_no_torch():
    import subprocess
    import sys

    code = "import sys, robeval; robeval.ModelConfig(input_size=(1, 8, 8)); print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize(
    "stated, said",
    [({"std": (0.0,)}, "std is one positive number per channel"), ({"crop_pct": 2.0}, "crop_pct is a fraction in (0, 1]")],
)
def test_a_model_config_given_from_python_is_checked_as_a_dict_is(stated, said):
    """A (module, ModelConfig) pair has every field judged as the same facts given as a dict: one line."""
    from robeval.models.given import given_from_object

    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
    for config in (robeval.ModelConfig(input_size=(1, 8, 8), **stated), {"input_size": (1, 8, 8), **stated}):
        with pytest.raises(UserError, match=rf"^model config .*: {re.escape(said)}$"):
            given_from_object((net, config))
    fitted = given_from_object((net, robeval.ModelConfig(input_size=[1, 8, 8])))  # type: ignore[arg-type]
    assert fitted.meta.input_size == (1, 8, 8)

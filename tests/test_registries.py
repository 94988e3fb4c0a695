"""The registries drive everything: each registered model and attack is tested by being registered,
and a new one (registered here, at test time) runs through run, table and check untouched."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch

import robeval
from robeval.api import evaluate_full
from robeval.attacks import create, list_attacks, register_attack
from robeval.attacks.base import Attack
from robeval.attacks.registry import ATTACK_KINDS
from robeval.attacks.registry import ATTACKS as ATTACK_REGISTRY
from robeval.attacks.transfer import SourceModel
from robeval.data.digits import digits_split
from robeval.evaluation.plan import make_plan
from robeval.model_config import ModelConfig
from robeval.models import build_network, config_of, get_spec, list_models, register_model
from robeval.models.attention.kinds import ATTENTION_KINDS
from robeval.models.catalog import DIGITS, DIGITS_CFG
from robeval.models.registry import MODELS as MODEL_REGISTRY
from robeval.models.weights import NO_WEIGHTS
from robeval.report.naming import attack_title
from robeval.report.paper import render
from robeval.results.runs import resolve_runs
from robeval.store import Store

from .conftest import FAST_SETTINGS

MODELS = [s.name for s in list_models()]
COMPUTED_UP_TO = 10_000_000  # parameters: a larger model is built and run on the meta device (shapes only; its
# layers compute at the family's smaller sizes, every family's digits model among them: a small FourierFormer's
# build and pass took 5 s of CPU, a small Swin's 2.5 s, of the suite's slowest module)
ATTACKS = [s.name for s in list_attacks()]


@pytest.mark.parametrize("name", MODELS)
def test_every_registered_model_builds_runs_and_round_trips_its_weights(name):
    spec = get_spec(name)
    torch.manual_seed(0)
    device = "cpu" if spec.params is not None and spec.params <= COMPUTED_UP_TO else "meta"
    with torch.device(device):  # every option, at its default
        model = robeval.load_model(name, pretrained=False, device=device, **spec.options)
    assert model.meta.weights == "random" and model.meta.family == spec.family and spec.description
    with torch.device("meta"):  # a second build, without the seconds a large model's initialisation takes
        fresh = build_network(name)
    with torch.no_grad():
        out = model(torch.rand(1, *model.meta.input_size, device=device))
    assert out.shape == (1, model.meta.num_classes) and (device == "meta" or torch.isfinite(out).all())
    shapes = {k: tuple(v.shape) for k, v in fresh.state_dict().items()}
    assert shapes == {k: tuple(v.shape) for k, v in model.net.state_dict().items()}  # a strict load would fit
    # the facts listings and checks read without building are the built network's own
    assert spec.config == ModelConfig.from_cfg(config_of(fresh)) and out.shape == (1, spec.config.num_classes)
    counted = sum(p.numel() for p in fresh.parameters())
    if spec.package == "robeval":  # robeval's own registrations carry their count (listings read it unbuilt)
        assert spec.params == counted, f"{name}: its parameter count is stale; run scripts/count_parameters.py"
    else:  # an installed plugin's need not carry one (robeval's count table has none); one it gives is right
        assert spec.params in (None, counted), f"{name}: its package states {spec.params} parameters, not {counted}"
    if spec.is_adaptive:
        plan = make_plan(robeval.api.make_config(models=name, attacks="pgd", adaptive=True))
        assert [j.name for j in plan.jobs] == [name, name + "+adaptive"]


@pytest.mark.parametrize("name", ATTACKS)
def test_every_registered_attack_is_described_stays_in_the_ball_and_is_listed(name):
    spec = next(s for s in list_attacks() if s.name == name)
    assert spec.title and spec.kind in ATTACK_KINDS and spec.description and spec.implementation
    assert attack_title(name) == spec.title
    model = robeval.load_model("digits-deit")
    x, y = (torch.from_numpy(a[:16]) for a in digits_split("test"))
    eps = 8 / 255
    source = SourceModel(model, "digits-deit")  # what transfer attacks craft on (here the target itself)
    try:
        x_adv = create(name, model, eps=eps, source=source, **FAST_SETTINGS.get(name, {}))(x, y)
    finally:
        source.close()
    assert (x_adv - x).abs().max() <= eps + 1e-6 and x_adv.min() >= 0 and x_adv.max() <= 1
    assert name in {a.name for a in list_attacks()}


def test_an_attack_class_takes_its_defaults_and_curve_facts_from_its_registration():
    """Written once, in attacks/catalog.py (data, read without torch): the class a registration binds runs
    with those defaults and draws its curve along that axis, used through the registry or on its own."""
    from robeval.attacks.gradient import PGD

    for spec in list_attacks():
        cls = spec.cls  # every class imported and bound
        assert cls.name == spec.name and cls.defaults == spec.defaults, spec.name
        assert (cls.curve_axis, cls.curve_setting) == (spec.curve_axis, spec.curve_setting), spec.name
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
    assert PGD(model, eps=8 / 255).steps == 20 and PGD(model, eps=8 / 255, steps=3).steps == 3


EMBEDDED = [s.name for s in list_models() if s.weights.kind == "embedded"]


@pytest.mark.parametrize("name", EMBEDDED)
def test_every_embedded_demo_is_shipped_small_and_accurate(name):
    model = robeval.load_model(name)
    assert model.meta.checkpoint.endswith(f"{name}.safetensors") and len(model.meta.checkpoint_sha256) == 64
    x, y = (torch.from_numpy(a) for a in digits_split("test"))
    with torch.inference_mode():
        acc = (model(x).argmax(1) == y).float().mean().item()
    assert acc >= 0.95, f"{name}: {acc:.4f}"


@pytest.mark.parametrize("kind", list(ATTENTION_KINDS))
def test_every_attention_kind_is_a_whole_family(kind):
    for name in (f"digits-deit-{kind}", *(f"deit-{size}-{kind}" for size in ("tiny", "small", "base"))):
        spec = get_spec(name)
        assert spec.family == f"deit-{kind}" and spec.options == ATTENTION_KINDS[kind].options
    assert get_spec(f"digits-deit-{kind}").config == DIGITS


def test_the_facts_of_timm_architectures_are_timms_pretrained_configs():
    """robeval's registrations state their facts as data (read without torch); a timm architecture's are
    timm's own pretrained config."""
    from robeval.models.hub import timm_config
    from robeval.models.registry import Lazy

    archs = {s.name: s.builder.arguments["arch"] for s in list_models()
             if isinstance(s.builder, Lazy) and "arch" in s.builder.arguments}  # fmt: skip
    assert {"deit-tiny", "deit-small-elliptical", "deit-base-kde", "deit-tiny-distilled", "swin-small-super"} <= set(archs)
    for name, arch in archs.items():
        assert get_spec(name).config == timm_config(arch), name


def test_records_do_not_depend_on_the_batch_size():
    """Per-example seeds: the random starts of PGD, SPSA and APGD come from the example, not the batch."""
    attacks = "fgsm,pgd,spsa,apgd-ce,apgd-t,fmn"
    settings = {"spsa": {"iterations": 3, "samples": 8}, "apgd-ce": {"n_iter": 8}, "apgd-t": {"n_iter": 8, "n_target_classes": 2},
                "fmn": {"steps": 10}}
    runs = [evaluate_full(models="digits-deit", eps="8/255", n_examples=40, attacks=attacks, settings=settings,
                          batch_size=b).records for b in (7, 32)]
    columns = ["model", "attack", "eps", "example", "adv_top1", "adv_top5", "adv_pred"]
    a, b = (r[columns].sort_values(["attack", "example"]).reset_index(drop=True) for r in runs)
    pd.testing.assert_frame_equal(a, b)
    assert (runs[0]["linf"] - runs[1].set_index(runs[0].index)["linf"]).abs().max() < 1e-5


class _ShiftDown(Attack):
    """A toy attack: every pixel eps darker."""

    defaults = {"strength": 1.0}

    def perturb(self, x, y):
        return self.project(x - self.eps * self.strength, x)


@pytest.fixture()
def toy_registrations():
    register_attack("toy-shift", title="Toy shift", norms=("Linf",), kind="white-box", implementation="tests",
                    description="every pixel eps darker")(_ShiftDown)

    @register_model("toy-digits", family="toy", weights=NO_WEIGHTS, config=DIGITS,
                    description="a linear classifier on 8x8 digits")
    def build(scale: float = 1.0):
        net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
        net.pretrained_cfg = dict(DIGITS_CFG)
        return net

    yield
    ATTACK_REGISTRY.remove("toy-shift")
    MODEL_REGISTRY.remove("toy-digits")


def test_a_new_attack_and_model_need_only_their_registration(tmp_path, toy_registrations, capsys):
    from robeval.cli import main

    store = tmp_path / "s.sqlite"
    res = evaluate_full(models=["toy-digits", "digits-deit"], attacks="toy-shift,pgd", eps="8/255", n_examples=20,
                        weights="random", settings={"toy-shift": {"strength": 0.5}}, store=str(store), out=tmp_path / "o")
    s = res.summary
    assert set(s["attack"]) == {"clean", "toy-shift", "pgd", "any"} and set(s["model"]) == {"toy-digits", "digits-deit"}
    assert json.loads((tmp_path / "o" / "run.json").read_text())["attack_settings"]["toy-shift"] == {"strength": 0.5}
    table = render(resolve_runs(Store(store), [])[0].summary, "md")
    assert "Toy shift Top-1" in table and "| toy-digits |" in table
    for command in (["table", "--store", str(store)], ["check", "--store", str(store)]):
        try:
            main(command)
        except SystemExit as done:
            assert done.code in (0, None)
    out = capsys.readouterr().out
    assert "Toy shift Top-1" in out and "Soundness checks" in out
    assert get_spec("toy-digits").options == {"scale": 1.0}  # read from the builder's signature
    assert "toy-digits" in {m.name for m in list_models()}  # listed in this process at once

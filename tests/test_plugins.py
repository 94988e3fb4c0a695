"""Installed packages extend robeval through entry points: ``robeval.models`` (a model by name) and
``robeval.attention`` (an attention kind, which gives a whole family of models).  The entry points here
are stand-ins for an installed package's (tests/test_tutorial.py installs a real one); each test leaves
the registries as it found them."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch
from torch import nn

import robeval
from robeval.models import names, plugins
from robeval.models.attention.kinds import ATTENTION_KINDS, AttentionKind
from robeval.models.registry import MODELS
from tests.conftest import one_line_error


class PlainAttention(nn.Module):
    """The stated interface only: timm's Attention constructor, forward(x, attn_mask=None)."""

    def __init__(self, dim, num_heads=8, qkv_bias=False, **_):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)
        self.scale_by = 1.0

    def forward(self, x, attn_mask=None):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        attn = (self.scale_by * q @ k.transpose(-2, -1) * (C // self.num_heads) ** -0.5).softmax(-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(B, N, C))


class NoTimmConstructor(nn.Module):
    def __init__(self):
        super().__init__()


def set_scale(net, scale_by=1.0):
    for m in net.modules():
        if isinstance(m, PlainAttention):
            m.scale_by = scale_by


def digits_mlp():
    """A digits MLP from a plugin."""
    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))
    net.pretrained_cfg = {"input_size": (1, 8, 8), "num_classes": 10}
    return net


class Entry:
    """What importlib.metadata gives for an installed package's entry point."""

    def __init__(self, name, obj, package, error=None):
        self.name, self.value, self._obj, self._error = name, f"{package.replace('-', '_')}:{name}", obj, error
        self.dist = SimpleNamespace(name=package)

    def load(self):
        if self._error is not None:
            raise self._error
        return self._obj


@pytest.fixture()
def installed(monkeypatch):
    """``installed(models=[Entry...], attention=[Entry...])`` stands in for the installed packages."""
    models, kinds = dict(MODELS._entries), dict(ATTENTION_KINDS._entries)

    def install(models=(), attention=()):
        groups = {plugins.MODEL_GROUP: list(models), plugins.ATTENTION_GROUP: list(attention)}

        def entry_points(group):
            found: dict[str, tuple] = {}
            for entry in groups[group]:
                found[entry.name] = (*found.get(entry.name, ()), entry)
            return found

        monkeypatch.setattr(plugins, "entry_points", entry_points)
        monkeypatch.setattr(names, "entry_points", entry_points)

    yield install
    MODELS._entries.clear()
    MODELS._entries.update(models)
    ATTENTION_KINDS._entries.clear()
    ATTENTION_KINDS._entries.update(kinds)
    plugins._FAILED.clear()


def test_a_plugin_kind_is_a_whole_family_that_runs(installed, cli, tmp_path):
    installed(attention=[Entry("plain", PlainAttention, "plain-attention")])
    spec = robeval.models.get_spec("digits-deit-plain")
    assert spec.package == "plain-attention" and spec.family == "deit-plain" and spec.config.input_size == (1, 8, 8)
    for size in ("tiny", "small", "base"):
        assert robeval.models.get_spec(f"deit-{size}-plain").config.input_size == (3, 224, 224)
    with torch.device("meta"):
        net = robeval.models.build_network("deit-tiny-plain")
        assert net(torch.empty(2, 3, 224, 224)).shape == (2, 1000)  # timm's blocks call it with is_causal
    result = cli("run", "--model", "digits-deit", "--model", "digits-deit-plain", "--weights", "random", "-n", "8",
                 "--attacks", "fgsm", "--store", str(tmp_path / "s.sqlite"), "-q")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "digits-deit-plain" in result.stdout


def test_the_listing_names_each_plugins_package(installed, cli):
    kind = AttentionKind("scaled", PlainAttention, "scaled dot-product", "a paper", options={"scale_by": 1.0},
                         configure=set_scale)  # fmt: skip
    installed(models=[Entry("mlp-digits", digits_mlp, "my-models")],
              attention=[Entry("plain", PlainAttention, "plain-attention"), Entry("scaled", kind, "scaled-pkg")])
    rows = {m.name: m for m in robeval.models.list_models()}
    assert rows["mlp-digits"].package == "my-models" and rows["mlp-digits"].params is None
    assert rows["mlp-digits"].description == "A digits MLP from a plugin."
    assert rows["deit-small-plain"].package == "plain-attention" and rows["deit-small-plain"].config.input_size == (3, 224, 224)
    assert rows["digits-deit-scaled"].options == {"scale_by": 1.0} and rows["digits-deit"].package == "robeval"
    listed = cli("models")
    assert listed.returncode == 0 and "plain-attention" in listed.stdout and "my-models" in listed.stdout


def test_a_plugin_model_runs_by_its_entry_points_name(installed, cli, tmp_path):
    installed(models=[Entry("mlp-digits", digits_mlp, "my-models")])
    result = cli("run", "--model", "mlp-digits", "-n", "8", "--attacks", "fgsm", "--store", str(tmp_path / "s.sqlite"),
                 "-q")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "mlp-digits" in result.stdout


def test_a_plugin_that_fails_to_import_is_one_warning_and_the_others_work(installed, cli, tmp_path):
    installed(models=[Entry("broken", None, "broken-pkg", error=ImportError("No module named 'missing_dep'")),
                      Entry("mlp-digits", digits_mlp, "my-models")])  # fmt: skip
    listed = cli("models")
    assert listed.returncode == 0 and "mlp-digits" in listed.stdout and "digits-deit" in listed.stdout
    warnings = [line for line in listed.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1 and warnings[0].startswith("warning: plugin broken-pkg") and "missing_dep" in warnings[0]
    used = cli("run", "--model", "broken", "-n", "4", "--store", str(tmp_path / "s.sqlite"))
    assert one_line_error(used, "plugin broken-pkg", "failed to import", "missing_dep")
    ok = cli("run", "--model", "mlp-digits", "-n", "4", "--attacks", "fgsm", "--store", str(tmp_path / "t.sqlite"), "-q")
    assert ok.returncode == 0, ok.stderr


def test_two_packages_giving_one_name_are_one_line_naming_both(installed, cli, tmp_path):
    installed(models=[Entry("twin", digits_mlp, "first-pkg"), Entry("twin", digits_mlp, "second-pkg")],
              attention=[Entry("kde", PlainAttention, "kde-pkg")])  # fmt: skip
    used = cli("run", "--model", "twin", "-n", "4", "--store", str(tmp_path / "s.sqlite"))
    assert one_line_error(used, "'twin' is registered by two packages, first-pkg and second-pkg")
    listed = cli("models")
    warnings = [line for line in listed.stderr.splitlines() if line.strip()]
    assert any("first-pkg and second-pkg" in w for w in warnings)
    assert any("attention kind 'kde' is registered by two packages, robeval and kde-pkg" in w for w in warnings)
    assert robeval.models.get_spec("digits-deit-kde").package == "robeval"  # robeval's own stays


def test_a_plugin_layer_that_does_not_fit_timm_is_one_line(installed, cli, tmp_path):
    installed(attention=[Entry("odd", NoTimmConstructor, "odd-pkg"), Entry("what", 3, "number-pkg"),
                         Entry("elliptical", PlainAttention, "ell-pkg")])  # fmt: skip
    used = cli("run", "--model", "digits-deit-odd", "--weights", "random", "-n", "4", "--store",
               str(tmp_path / "s.sqlite"))  # fmt: skip
    assert one_line_error(used, "digits-deit-odd of odd-pkg does not build", "TypeError")
    assert not (tmp_path / "s.sqlite").exists()
    assert one_line_error(cli("run", "--model", "digits-deit-what", "-n", "4"), "attention kind what of number-pkg",
                          "attention layer class")  # fmt: skip
    listed = cli("models")  # robeval's own elliptical models stay, and the listing says why the kind is not there
    assert listed.returncode == 0 and "would give digits-deit-elliptical, a model robeval registers" in listed.stderr


def test_plugin_entry_points_are_read_lazily(installed):
    loaded = []

    class Counting(Entry):
        def load(self):
            loaded.append(self.name)
            return super().load()

    installed(models=[Counting("mlp-digits", digits_mlp, "my-models")],
              attention=[Counting("plain", PlainAttention, "plain-attention")])  # fmt: skip
    robeval.models.get_spec("digits-deit")
    from robeval.evaluation.config import make_config

    assert make_config(models=["digits-deit-plain", "mlp-digits"]).models == ["digits-deit-plain", "mlp-digits"]
    assert loaded == []  # robeval's own models need no plugin, and a run's options are judged by the names alone
    robeval.models.get_spec("deit-base-plain")
    assert loaded == ["plain"]
    robeval.models.list_models()
    assert loaded == ["plain", "mlp-digits"]


def test_robeval_models_builds_no_network(monkeypatch, cli):
    """Every fact the listing shows is data on the registration: with every builder failing it lists."""
    import timm

    def fails(*args, **kwargs):
        raise AssertionError("a network was built for the listing")

    for name, spec in list(MODELS._entries.items()):
        monkeypatch.setitem(MODELS._entries, name, replace(spec, builder=fails))
    monkeypatch.setattr(timm, "create_model", fails)
    monkeypatch.setattr(torch.nn.Module, "__init__", fails)
    rows = robeval.models.list_models()
    assert len(rows) == len(MODELS) and all(r.params for r in rows if r.package == "robeval")
    listed = cli("models")
    assert listed.returncode == 0 and "digits-deit-elliptical" in listed.stdout and "86.57M" in listed.stdout


def test_an_attention_kind_from_a_plugin_keeps_its_options(installed):
    kind = AttentionKind("scaled", PlainAttention, "scaled", "a paper", options={"scale_by": 1.0}, configure=set_scale)
    installed(attention=[Entry("scaled", kind, "scaled-pkg")])
    torch.manual_seed(0)
    model = robeval.load_model("digits-deit-scaled", pretrained=False, scale_by=0.5)
    assert {m.scale_by for m in model.modules() if isinstance(m, PlainAttention)} == {0.5}
    assert model.meta.options == {"scale_by": 0.5}


def test_reproduce_column_runs_find_runs_of_a_plugin_model(installed, tmp_path):
    from robeval.reproduce.column_runs import newest_matching_run

    installed(attention=[Entry("plain", PlainAttention, "plain-attention")])
    store = tmp_path / "s.sqlite"
    options = dict(models=["digits-deit-plain"], n_examples=8, attacks="none", data="digits", weights="random")
    run = robeval.evaluate_full(store=store, device="cpu", **options)
    assert newest_matching_run(store, options) == run.run_id

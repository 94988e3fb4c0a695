"""Which code made a number: a run records the code of every model that is not robeval's own (a plugin's
distribution and the SHA-256 of its attention layer's file; a model file's SHA-256), a resume refuses a
run whose models' code changed since it started, and tables and ``compare`` name a change between runs."""

from __future__ import annotations

import importlib.util
import sys

import pytest

import robeval
from robeval.api import evaluate_full
from robeval.core.errors import UserError

from .reference_runs import StopAfter
from .test_plugins import Entry, installed  # noqa: F401  (the fixture)

LAYER = """
from timm.models.vision_transformer import Attention


class MineAttention(Attention):
    \"\"\"timm's attention, in a file of its own (the file a run records).\"\"\"
"""
OPTIONS = dict(models=["digits-deit-mine"], weights="random", n_examples=20, batch_size=10, attacks="fgsm,pgd",
               settings={"pgd": {"steps": 3}}, threads=1)  # fmt: skip


@pytest.fixture()
def plugin(installed, tmp_path):  # noqa: F811
    """The kind ``mine`` of the distribution ``mine-attention``, its layer in a file of its own."""
    path = tmp_path / "mine_attention.py"
    path.write_text(LAYER)
    spec = importlib.util.spec_from_file_location("mine_attention_for_tests", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    installed(attention=[Entry("mine", module.MineAttention, "mine-attention")])
    yield path
    sys.modules.pop(spec.name, None)


def test_a_run_records_a_plugin_kinds_distribution_layer_file_and_parameters(plugin, tmp_path):
    run = evaluate_full(**OPTIONS)
    facts = run.info["models"]["digits-deit-mine"]
    assert facts["code"]["distribution"] == "mine-attention" and facts["code"]["path"] == str(plugin.resolve())
    assert len(facts["code"]["sha256"]) == 64 and facts["params"] > 0
    assert robeval.evaluate_full(models=["digits-deit"], n_examples=10, attacks="fgsm").info["models"]["digits-deit"][
        "code"] is None  # robeval's own: its version is the run's  # fmt: skip


def test_a_resume_refuses_a_run_whose_model_code_changed(plugin, tmp_path):
    store = tmp_path / "s.sqlite"
    with pytest.raises(KeyboardInterrupt):
        evaluate_full(store=str(store), reporter=StopAfter(1), **OPTIONS)
    plugin.write_text(LAYER + "\n# changed\n")
    with pytest.raises(UserError, match=r"code of model digits-deit-mine changed since the run started \(.*mine_attention\.py"):
        evaluate_full(store=str(store), resume="latest", **OPTIONS)


def test_tables_and_compare_name_a_change_of_code_between_runs(plugin, tmp_path):
    store = str(tmp_path / "s.sqlite")
    before = evaluate_full(store=store, **OPTIONS).run_id
    plugin.write_text(LAYER + "\n# changed\n")
    after = evaluate_full(store=store, **OPTIONS).run_id
    found = robeval.open_run([before, after], store=store)
    printed = str(found.compare(f"{before}:digits-deit-mine", f"{after}:digits-deit-mine"))
    assert "differ in the models' code (digits-deit-mine (mine-attention mine_attention.py SHA-256" in printed
    assert "NOT LIKE WITH LIKE" in found.table("md") and "the models' code" in found.table("md")

"""``--compile`` (robeval.evaluation.compiled): padded buckets that change no row's logits or input
gradient, runs whose records equal eager ones, graphs bounded by the buckets, a compiler failure that
falls back to eager passes, and the default per device.  torch.compile is exercised with its
``aot_eager`` backend (the graphs, guards and padding, without inductor's minutes of C++ builds on this
CPU); inductor's own records were equal too (benchmarks/compile_cpu.py, benchmarks/RESULTS.md)."""

from __future__ import annotations

import warnings

import pytest
import torch

import robeval
from robeval.evaluation import compiled
from robeval.evaluation.compiled import CompiledPasses, buckets, compiles, graphs_made

from .conftest import FAST_SETTINGS


@pytest.fixture(autouse=True)
def light_backend(monkeypatch):
    monkeypatch.setattr(compiled, "BACKEND", "aot_eager")


def test_buckets_are_the_batch_and_its_halvings():
    assert buckets(100) == [8, 13, 25, 50, 100] and buckets(8) == [8] and buckets(3) == [3] and buckets(16) == [8, 16]


def test_a_padded_pass_gives_each_row_its_own_logits_and_input_gradient():
    model = robeval.load_model("digits-deit")
    passes = CompiledPasses(model, batch_size=16)
    x = torch.rand(40, 1, 8, 8)
    for n in (1, 5, 8, 11, 16, 40):  # below a bucket, at one, above the batch (chunks)
        xs = [x[:n].clone().requires_grad_(True) for _ in range(2)]
        outs = [model(xs[0]), passes(xs[1])]
        torch.testing.assert_close(outs[1], outs[0], rtol=0, atol=1e-5)  # another batch size: another rounding
        for out in outs:
            torch.nn.functional.cross_entropy(out, out.argmax(1).detach()).backward()
        torch.testing.assert_close(xs[1].grad, xs[0].grad, rtol=1e-4, atol=1e-6)  # no pad's gradient reaches a row


def test_a_compiled_run_has_the_records_of_an_eager_one_and_a_graph_per_bucket_and_grad_mode():
    kw = dict(models=["digits-deit"], n_examples=20, batch_size=16, attacks="fgsm,pgd,apgd-ce,square",
              settings={**FAST_SETTINGS, "pgd": {"steps": 3}}, threads=1, progress=False)  # fmt: skip
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        eager = robeval.evaluate_full(compile="auto", **kw).records
    assert not [w for w in said if "--compile" in str(w.message)]  # auto leaves it off on the CPU, silently
    before = graphs_made()
    with pytest.warns(UserWarning, match=r"^--compile on compiles on the CPU, .* --compile auto \(the default\) leaves"):
        made = robeval.evaluate_full(compile="on", **kw).records  # on the CPU: one line says what auto would do
    graphs = graphs_made() - before
    keys = ["model", "eps", "attack", "example"]
    columns = [c for c in eager.columns if c != "run_id"]
    ordered = [r.sort_values(keys)[columns].reset_index(drop=True) for r in (eager, made)]
    assert ordered[0].equals(ordered[1])
    assert 0 < graphs <= len(buckets(16)) * 2  # each bucket (8, 16) once with an input gradient, once without


def test_a_pass_the_compiler_cannot_build_runs_eagerly_said_once(monkeypatch):
    def broken(graph, inputs):
        raise RuntimeError("this backend builds nothing")

    monkeypatch.setattr(compiled, "BACKEND", broken)
    torch._dynamo.reset()
    model = robeval.load_model("digits-deit")
    passes = CompiledPasses(model, batch_size=8)
    x = torch.rand(8, 1, 8, 8)
    with pytest.warns(UserWarning, match="--compile: .* while compiling; running eagerly"):
        out = passes(x)
    torch.testing.assert_close(out, model(x))
    assert passes.eager and passes(x).shape == (8, 10)  # eager from then on, without a second warning


def test_auto_compiles_on_cuda_and_not_on_the_cpu():
    assert compiles("auto", torch.device("cuda")) and not compiles("auto", torch.device("cpu"))
    assert compiles("on", torch.device("cpu")) and not compiles("off", torch.device("cuda"))


def test_bf16_crafting_compiled_is_rechecked_in_fp32_and_passes_the_strength_check():
    from robeval.results.soundness import run_findings

    kw = dict(models=["digits-deit"], n_examples=24, batch_size=16, attacks="pgd", settings={"pgd": {"steps": 3}},
              precision="bf16", threads=1, progress=False)  # fmt: skip
    eager = robeval.evaluate_full(compile="off", **kw)
    before = graphs_made()
    made = robeval.evaluate_full(compile="on", **kw)
    assert graphs_made() - before <= len(buckets(16)) * 2 * 2  # per bucket: with / without a gradient, bf16 and fp32
    assert not [f for f in run_findings(made.summary, made.info)["flags"] if f["check"] == "reduced-precision"]
    checked = [r.dropna(subset=["fp32_top1"]).sort_values("example") for r in (eager.records, made.records)]
    assert len(checked[1]) > 0 and checked[0]["fp32_top1"].tolist() == checked[1]["fp32_top1"].tolist()

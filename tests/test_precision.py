"""--precision: attacks craft in reduced precision, every counted prediction is strict fp32, and the
white-box attacks are checked again in fp32 on a sample (the precision flag)."""

from __future__ import annotations

import pytest
import torch

from robeval.api import evaluate_full
from robeval.core.errors import UserError
from robeval.core.precision import float32_math, get_precision
from robeval.models import get_spec, register_model
from robeval.models.registry import MODELS as MODEL_REGISTRY
from robeval.models.weights import embedded_weights
from robeval.report.paper import render
from robeval.results.runs import combine, resolve_runs
from robeval.results.soundness import run_findings
from robeval.store import Store

from .conftest import one_line_error

RUN = dict(models="digits-deit", eps="8/255", n_examples=40, attacks="fgsm,pgd", settings={"pgd": {"steps": 5}})


@pytest.fixture(scope="module")
def fp32_and_bf16():
    return evaluate_full(**RUN), evaluate_full(**RUN, precision="bf16", channels_last=True)


def test_bf16_crafting_counts_clean_predictions_in_fp32_exactly(fp32_and_bf16):
    fp32, bf16 = fp32_and_bf16
    key = ["model", "attack", "eps", "example"]
    a, b = (r.records.sort_values(key).reset_index(drop=True) for r in (fp32, bf16))
    for column in ("clean_top1", "clean_top5", "label"):
        assert a[column].equals(b[column])
    clean = a["attack"] == "clean"
    assert a.loc[clean, "adv_pred"].equals(b.loc[clean, "adv_pred"])
    assert (b.loc[~clean, "linf"] <= 8 / 255 + 1e-6).all()  # every adversarial batch passed the eps check
    assert bf16.info["config"]["precision"] == "bf16" and bf16.info["config"]["channels_last"] is True
    assert set(bf16.summary["precision"]) == {"bf16"} and set(fp32.summary["precision"]) == {"fp32"}


def test_counted_predictions_ignore_a_global_reduced_matmul_precision():
    """A user's torch.set_float32_matmul_precision('medium') makes oneDNN matmuls bf16 on a CPU; the
    counted predictions stay IEEE float32."""
    reference = evaluate_full(models="digits-deit", eps="8/255", n_examples=40, attacks="none").records
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("medium")
    try:
        medium = evaluate_full(models="digits-deit", eps="8/255", n_examples=40, attacks="none").records
    finally:
        torch.set_float32_matmul_precision(before)
    assert reference["adv_pred"].tolist() == medium["adv_pred"].tolist()


def test_float32_math_sets_and_restores_every_backend_switch():
    backends = torch.backends
    before = (backends.cuda.matmul.fp32_precision, backends.mkldnn.matmul.fp32_precision)
    with float32_math(tf32=True):
        assert backends.cuda.matmul.fp32_precision == "tf32" and backends.mkldnn.matmul.fp32_precision == "ieee"
    with float32_math():
        assert backends.cudnn.conv.fp32_precision == "ieee"
    assert (backends.cuda.matmul.fp32_precision, backends.mkldnn.matmul.fp32_precision) == before


def test_a_table_names_the_crafting_precision_and_never_mixes_two(tmp_path):
    store = str(tmp_path / "s.sqlite")
    kw = dict(models="digits-deit", eps="8/255", n_examples=10, attacks="fgsm", store=store)
    evaluate_full(**kw, precision="bf16")
    evaluate_full(**kw)
    runs = resolve_runs(Store(store), Store(store).runs()["id"].tolist())
    bf16 = next(r for r in runs if r.config["precision"] == "bf16")
    assert "attacks crafted in bf16, every prediction counted in strict fp32" in render(bf16.summary, "md")
    with pytest.raises(UserError, match="differ in precision"):
        combine(runs)


@pytest.mark.parametrize("args, words", [
    (["--precision", "fp8"], ["invalid --precision 'fp8'", "fp32 or tf32 or bf16 or fp16"]),
    (["--precision", "tf32"], ["--precision tf32 needs a CUDA GPU"]),
    (["--precision", "fp16"], ["--precision fp16 needs a CUDA GPU"]),
])
def test_precisions_a_cpu_cannot_run_are_one_line(cli, args, words):
    result = cli("run", "-n", "4", "--attacks", "fgsm", "--device", "cpu", *args)  # a GPU machine's CPU too
    assert result.returncode == 2 and one_line_error(result, *words)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="tf32 and fp16 run on a CUDA GPU only; none here")
@pytest.mark.parametrize("precision", ["tf32", "fp16"])
def test_gpu_only_precisions_run_on_the_gpu(cli, precision):
    result = cli("run", "-n", "4", "--attacks", "fgsm", "--precision", precision, "--quiet")
    assert result.returncode == 0, result.stderr


def test_get_precision_knows_gpu_only_ones():
    assert get_precision("tf32", on_gpu=True).tf32 and get_precision("bf16", on_gpu=False).autocast == "bfloat16"


def digits_deit_with(name: str, wrap):
    """Register ``name``: digits-deit with its trained weights and its forward wrapped as
    ``wrap(forward)``; the caller removes it again."""
    deit = get_spec("digits-deit")

    @register_model(name, family="toy", weights=embedded_weights("digits-deit"), config=deit.config)
    def build():
        net = deit.builder()
        net.forward = wrap(net.forward)
        return net

    return name


@pytest.fixture()
def masked_in_bf16():
    """digits-deit whose input gradient vanishes under autocast (as a model whose gradients underflow
    in reduced precision would): attacks crafted in bf16 cannot move."""

    def wrap(forward):
        def masked(x):
            if torch.is_autocast_enabled(x.device.type):
                x = x.detach() + 0 * x
            return forward(x)

        return masked

    yield digits_deit_with("toy-bf16-masked", wrap)
    MODEL_REGISTRY.remove("toy-bf16-masked")


def precision_flags(result):
    return [f for f in run_findings(result.summary, result.info)["flags"] if f["check"] == "reduced-precision"]


def test_the_fp32_check_flags_an_attack_that_bf16_weakened(masked_in_bf16):
    run = dict(models=["digits-deit", masked_in_bf16], eps="8/255", n_examples=100, attacks="pgd,apgd-ce",
               settings={"pgd": {"steps": 10}, "apgd-ce": {"n_iter": 10}}, precision="bf16")
    result = evaluate_full(**run)
    flagged = {(f["model"], line.split(" ")[2]) for f in precision_flags(result) for line in f["message"].split("; ")}
    assert flagged == {(masked_in_bf16, "pgd"), (masked_in_bf16, "apgd-ce")}
    checked = result.records.dropna(subset=["fp32_top1"])
    assert 30 <= checked["example"].nunique() < 100  # a sample, the same examples for every attack and model
    assert checked.groupby(["model", "attack"])["example"].apply(frozenset).nunique() == 1
    assert result.records.loc[result.records["attack"] == "clean", "fp32_top1"].isna().all()


def test_bf16_on_a_cpu_without_bf16_instructions_is_warned(monkeypatch):
    from robeval.core.precision import slower_here

    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False, raising=False)
    assert "no bf16 instructions" in slower_here(get_precision("bf16"), "cpu")
    assert slower_here(get_precision("fp32"), "cpu") is None and slower_here(get_precision("bf16"), "cuda") is None
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True, raising=False)
    assert slower_here(get_precision("bf16"), "cpu") is None


SEEN: list[tuple[bool, torch.dtype]] = []  # per forward of toy-dtype-recorder: (counted, its logits' dtype)


@pytest.fixture()
def dtype_recorder():
    """digits-deit recording each forward: whether it is a counted one (robeval counts under inference
    mode, attacks need gradients) and the dtype the network computed its logits in."""

    def wrap(forward):
        def recorded(x):
            out = forward(x)
            SEEN.append((torch.is_inference_mode_enabled(), out.dtype))
            return out

        return recorded

    SEEN.clear()
    yield digits_deit_with("toy-dtype-recorder", wrap)
    MODEL_REGISTRY.remove("toy-dtype-recorder")


DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # where the runs below compute, and the caller's autocast


def test_bf16_counts_adversarial_predictions_in_fp32_inside_a_callers_autocast(dtype_recorder):
    run = dict(RUN, models=[dtype_recorder], n_examples=16, precision="bf16", device=DEVICE)
    with torch.autocast(DEVICE, dtype=torch.bfloat16):  # the caller's own, around the whole evaluation
        result = evaluate_full(**run)
    counted = {dtype for is_counted, dtype in SEEN if is_counted}
    crafted = {dtype for is_counted, dtype in SEEN if not is_counted}
    assert counted == {torch.float32}  # clean and adversarial predictions alike
    assert torch.bfloat16 in crafted  # the attacks did craft in bf16: the recorder tells them apart
    assert set(result.records["attack"]) == {"clean", "fgsm", "pgd"}


def test_an_fp32_run_inside_a_callers_autocast_crafts_and_counts_in_fp32(dtype_recorder):
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        evaluate_full(**dict(RUN, models=[dtype_recorder], n_examples=8, device=DEVICE))
    assert {dtype for _, dtype in SEEN} == {torch.float32} and any(not counted for counted, _ in SEEN)

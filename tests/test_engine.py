"""Engine features: out-of-memory halving, autocast and channels-last recorded, one clean pass per batch."""

from __future__ import annotations

import pytest
import torch

from robeval.api import evaluate_full
from robeval.evaluation import model_run, units


def test_out_of_memory_halves_the_batch(monkeypatch):
    from robeval.attacks.gradient import FGSM

    original = FGSM.perturb
    sizes = []

    def fussy(self, x, y):
        sizes.append(len(y))
        if len(y) > 8:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return original(self, x, y)

    monkeypatch.setattr(FGSM, "perturb", fussy)
    res = evaluate_full(models="digits-deit", eps="8/255", n_examples=30, attacks="fgsm", batch_size=30)
    assert sizes[:3] == [30, 15, 7] and max(s for s in sizes if s <= 8) <= 8
    assert res.info["oom_batch_splits"] >= 3
    assert len(res.records[res.records.attack == "fgsm"]) == 30


def test_other_errors_stop_the_model_and_are_named(monkeypatch):
    from robeval.attacks.gradient import FGSM

    monkeypatch.setattr(FGSM, "perturb", lambda self, x, y: (_ for _ in ()).throw(ValueError("boom")))
    res = evaluate_full(models="digits-deit", eps="8/255", n_examples=10, attacks="fgsm")
    assert res.info["status"] == "failed"
    assert "attack fgsm failed at eps 8/255, batch 0: ValueError: boom at test_engine.py" in res.info["failed_models"]["digits-deit"]


def test_one_clean_pass_per_batch(monkeypatch):
    calls = []
    original = model_run.topk_hits

    def spy(logits, y):
        calls.append(len(y))
        return original(logits, y)

    monkeypatch.setattr(model_run, "topk_hits", spy)
    monkeypatch.setattr(units, "topk_hits", spy)
    evaluate_full(models="digits-deit", eps="4/255,8/255", n_examples=20, attacks="fgsm,pgd", batch_size=10)
    # per batch: one clean evaluation + one per (eps, attack); never a clean pass per attack
    assert len(calls) == 2 * (1 + 2 * 2)


def test_run_records_peak_memory_and_times_the_clean_pass(monkeypatch):
    """A batch's one clean pass is timed once, in the first eps's clean unit.  The clock is the test's: it
    moves one second per pass without gradients (the clean and final passes) and not otherwise, so the
    timings are exact whatever else the machine runs."""
    import time

    from robeval.models.wrapper import NormalizedModel

    clock = [0.0]
    original = NormalizedModel.forward

    def one_second_without_grad(self, x):
        if not torch.is_grad_enabled():
            clock[0] += 1.0
        return original(self, x)

    monkeypatch.setattr(NormalizedModel, "forward", one_second_without_grad)
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])
    res = evaluate_full(models="digits-deit", eps="4/255,8/255", n_examples=20, attacks="fgsm", batch_size=10)
    assert res.info["peak_memory_MB"]["process_rss"] > 100  # torch alone is several hundred MB
    timings = res.info["timings_seconds"]
    # two batches, each with one shared clean pass, counted once, in the first eps's clean unit
    assert timings["digits-deit|4/255|clean"] == pytest.approx(2.0)
    assert timings["digits-deit|8/255|clean"] == 0.0


def test_digits_arrays_are_fresh_copies():
    from robeval.data.digits import digits_split

    images, labels = digits_split("test")
    images[:] = 0
    labels[:] = -1
    again, again_labels = digits_split("test")
    assert again.max() > 0 and again_labels.min() == 0

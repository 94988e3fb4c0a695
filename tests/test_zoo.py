"""The embedded demo models: shipped, small, and accurate on the fixed digits test split."""

from __future__ import annotations

import pytest
import torch

import robeval
from robeval.data.digits import digits_split
from robeval.data.subsets import balanced_subset
from robeval.zoo import zoo_path


@pytest.mark.parametrize("name", ["digits-deit", "digits-deit-elliptical"])
def test_shipped_model_accuracy(name):
    path = zoo_path(name)
    assert path.exists() and path.stat().st_size < 2_000_000
    model = robeval.load_model(name)
    images, labels = digits_split("test")
    assert images.shape == (449, 1, 8, 8) and images.min() >= 0.0 and images.max() <= 1.0
    with torch.inference_mode():
        acc = (model(torch.from_numpy(images)).argmax(1) == torch.from_numpy(labels)).float().mean().item()
    assert acc >= 0.95, f"{name}: {acc:.4f}"


def test_split_is_fixed_and_disjoint():
    train, _ = digits_split("train")
    test, test_labels = digits_split("test")
    assert len(train) + len(test) == 1797
    assert len(test) == 449 and list(test_labels[:5]) == [3, 7, 1, 5, 9]


def test_balanced_subset_is_deterministic_and_balanced():
    _, labels = digits_split("test")
    chosen = balanced_subset(labels.tolist(), 50)
    assert chosen == sorted(chosen) == balanced_subset(labels.tolist(), 50)
    counts = torch.bincount(torch.tensor(labels[chosen]), minlength=10)
    assert counts.min() == counts.max() == 5

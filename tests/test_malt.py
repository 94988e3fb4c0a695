"""MALT's target ranking against a hand computation on a linear many-class model (where every gradient
and score has a closed form), and AutoAttack's APGD-T on the ranked targets on the digits demo: it fools
what apgd-t fools, its records do not depend on the batch, and with the audit's rest it covers exactly
AutoAttack's targets."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import robeval
from robeval.attacks import create
from robeval.attacks.malt import autoattack_targets, malt_targets, targets_not_in
from robeval.data.digits import digits_split
from robeval.evaluation.attack_guards import PassCounter


class Linear(nn.Module):
    """z = W x + b on flattened images: grad_x (z_t - z_y) = W_t - W_y everywhere."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor) -> None:
        super().__init__()
        self.weight, self.bias = nn.Parameter(weight), nn.Parameter(bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.flatten(1) @ self.weight.T + self.bias


def linear_toy(classes: int, seed: int = 0, examples: int = 6) -> tuple[Linear, torch.Tensor, torch.Tensor, int]:
    """A linear model, images, labels (the first half classified correctly, the rest drawn at random)
    and a class whose boundary with row 0's label has a zero gradient."""
    gen = torch.Generator().manual_seed(seed)
    weight = torch.randn(classes, 16, generator=gen, dtype=torch.float64)
    bias = torch.randn(classes, generator=gen, dtype=torch.float64)
    x = torch.rand(examples, 1, 4, 4, generator=gen, dtype=torch.float64)
    y = (x.flatten(1) @ weight.T + bias).argmax(1)
    y[examples // 2 :] = torch.randint(classes, (examples - examples // 2,), generator=gen)
    flat = int((y[0] + 1) % classes)
    weight[flat], bias[flat] = weight[y[0]], bias[y[0]] - 1.0  # z_flat - z_y0 = -1 everywhere
    return Linear(weight, bias), x, y, flat


def hand_ranking(
    model: Linear, x: torch.Tensor, y: torch.Tensor, k: int, dual: float, candidates: int = 100
) -> list[list[int]]:
    """MALT's ranking written out per example and class, in numpy: the 100 highest wrong logits, each
    scored (z_pred - z_t) / ||W_t - W_y||_dual (0 for a zero gradient), lowest first, ties by logit."""
    w, b = model.weight.detach().numpy(), model.bias.detach().numpy()
    out = []
    for image, label in zip(x.numpy(), y.tolist()):
        z = w @ image.reshape(-1) + b
        wrong = sorted((c for c in range(len(z)) if c != label), key=lambda c: -z[c])[:candidates]
        scores = []
        for logit_rank, c in enumerate(wrong):
            size = np.linalg.norm(w[c] - w[label], ord=dual)
            scores.append(((z.max() - z[c]) / size if size > 0 else 0.0, logit_rank, c))
        out.append([c for _, _, c in sorted(scores)[:k]])
    return out


@pytest.mark.parametrize("norm, dual", [("Linf", 1), ("L2", 2)])
def test_the_ranking_is_the_hand_computed_one_on_a_100_class_linear_model(norm, dual):
    model, x, y, flat = linear_toy(100)
    counter = PassCounter(model)
    ranked = malt_targets(counter, x, y, 9, norm)
    assert ranked.tolist() == hand_ranking(model, x, y, 9, dual)
    # the logits, then one forward-backward per candidate
    assert (counter.forward_images, counter.backward_images) == (6 + 6 * 99, 6 * 99)
    assert ranked[0, 0] == flat  # a zero-gradient boundary scores 0, as in MALT's code: it ranks first
    with torch.no_grad():
        wrong = model(x).argmax(1) != y
    assert wrong.any() and (ranked[wrong, 0] == model(x).argmax(1)[wrong]).all()  # the predicted class: score 0


def test_candidates_are_the_100_highest_wrong_logits():
    """With 130 classes, a class outside the top 100 is never chosen, however close its linear boundary."""
    model, x, y, _ = linear_toy(130, seed=1, examples=2)
    with torch.no_grad():
        z = model(x[:1])[0]
        outside = int(z.argsort(descending=True)[120])  # 120th highest: outside row 0's candidates
        model.weight[outside] = model.weight[y[0]] + 1e3  # a huge gradient: the lowest score, were it a candidate
        model.bias[outside] -= float(model(x[:1])[0, outside] - z[outside])  # the same logit as before
        assert float(model(x[:1])[0, outside] - z[outside]) == pytest.approx(0, abs=1e-6)
    assert outside in hand_ranking(model, x[:1], y[:1], 2, 1, candidates=129)[0]  # were every class a candidate
    ranked = malt_targets(model, x, y, 20, chunk=7)
    assert ranked.tolist() == hand_ranking(model, x, y, 20, 1)
    assert outside not in ranked[0].tolist()


def test_with_ten_classes_the_ranking_reorders_autoattacks_targets():
    model, x, y, _ = linear_toy(10, examples=6)
    x, y = x[:3], y[:3]  # the correctly classified rows: AutoAttack's targets are the 2nd to 10th logits
    with torch.no_grad():
        logits = model(x)
    ranked = malt_targets(model, x, y, 9)
    mine = autoattack_targets(logits, 9)
    assert (ranked.sort(1).values == mine.sort(1).values).all()
    rest = targets_not_in(mine, ranked[:, :3])
    assert (rest[:, 6:] == -1).all() and (rest[:, :6] >= 0).all()
    assert all(set(r[:6]) | set(m[:3]) == set(a) for r, m, a in zip(rest.tolist(), ranked.tolist(), mine.tolist()))


@pytest.fixture(scope="module")
def digits():
    x, y = digits_split("test")
    return robeval.load_model("digits-deit"), torch.from_numpy(x[:24]), torch.from_numpy(y[:24])


def robust_rows(model, attack, x, y, examples) -> set[int]:
    x_adv = attack(x, y, seed=3, examples=examples)
    assert (x_adv - x).abs().max() <= attack.eps + 1e-6
    with torch.no_grad():
        return {e for e, ok in zip(examples, (model(x_adv).argmax(1) == y).tolist()) if ok}


def test_with_nine_targets_it_fools_every_example_apgd_t_fools(digits):
    """At 16/255 (where the targets beyond the first matter) and 25 iterations (for time): with 9 targets
    its robust examples are among apgd-t's; with its single best target it leaves more robust."""
    model, x, y = digits
    examples = list(range(len(y)))
    eps, fewer = 16 / 255, {"n_iter": 25}
    malt = robust_rows(model, create("apgd-t-malt", model, eps, n_target_classes=9, **fewer), x, y, examples)
    aa = robust_rows(model, create("apgd-t", model, eps, **fewer), x, y, examples)
    one = robust_rows(model, create("apgd-t-malt", model, eps, n_target_classes=1, **fewer), x, y, examples)
    assert malt <= aa and malt < one and len(malt) < len(examples)


def test_its_records_do_not_depend_on_the_batch(digits):
    model, x, y = digits
    attack = create("apgd-t-malt", model, 8 / 255, n_iter=10, n_target_classes=3)
    whole = attack(x, y, seed=1, examples=list(range(24)))
    parts = torch.cat([attack(x[a:b], y[a:b], seed=1, examples=list(range(a, b))) for a, b in ((0, 9), (9, 24))])
    assert (whole - parts).abs().max() < 1e-5


def test_the_audits_rest_skips_the_targets_the_pass_ran(digits):
    """apgd-t-rest with skip_malt_targets=9 has nothing left to attack on 10 classes: the clean images
    come back for the correctly classified examples, after the ranking's passes alone."""
    model, x, y = digits
    counter = PassCounter(model)
    with torch.no_grad():
        correct = model(x).argmax(1) == y
    x_adv = create("apgd-t-rest", counter, 8 / 255, n_iter=10, skip_malt_targets=9)(x[correct], y[correct])
    n = int(correct.sum())
    assert torch.equal(x_adv, x[correct])
    assert counter.backward_images == 9 * n

"""The fast protocol's audit: the sample of survivors is decided by the run seed and each example's
index alone (the same whatever the batches), about the rate asked; the bound's arithmetic is
Clopper-Pearson's exact limit (checked against scipy's binomial test); a break escalates what it should."""

from __future__ import annotations

import random

import pytest
from scipy.stats import binom, binomtest

from robeval.evaluation.fast.audit import AUDIT_STAGES, audit_sample, escalated_stages
from robeval.evaluation.fast.bound import AuditBound, clopper_pearson_upper


def test_the_sample_does_not_depend_on_batches_or_their_order():
    survivors = list(range(0, 3000, 3))
    whole = audit_sample(7, survivors, 0.1)
    shuffled = survivors[:]
    random.Random(0).shuffle(shuffled)
    batches = [shuffled[i : i + 37] for i in range(0, len(shuffled), 37)]
    assert sorted(e for batch in batches for e in audit_sample(7, batch, 0.1)) == whole
    assert audit_sample(7, survivors, 0.1) == whole  # the same run seed, the same sample
    assert audit_sample(8, survivors, 0.1) != whole  # another seed, another sample
    assert set(audit_sample(7, survivors, 0.2)) >= set(whole)  # a larger rate adds examples, drops none


def test_the_sample_has_about_the_rate_asked():
    survivors = range(20000)
    for rate in (0.05, 0.1, 0.5):
        share = len(audit_sample(0, survivors, rate)) / 20000
        assert abs(share - rate) < 5 * (rate * (1 - rate) / 20000) ** 0.5
    assert audit_sample(0, survivors, 0.0) == [] and audit_sample(0, range(50), 1.0) == list(range(50))
    with pytest.raises(ValueError, match="rate"):
        audit_sample(0, survivors, 1.5)


@pytest.mark.parametrize("audited", [1, 2, 5, 10, 29, 30, 100, 317])
def test_the_upper_limit_is_scipys_exact_one(audited):
    for broken in sorted({0, 1, 2, audited // 3, audited - 1, audited} & set(range(audited + 1))):
        upper = clopper_pearson_upper(broken, audited)
        # the one-sided 95% limit is the upper end of the two-sided 90% exact interval
        assert upper == pytest.approx(binomtest(broken, audited).proportion_ci(0.90, "exact").high, abs=1e-9)
        if broken < audited:  # the rate at which d or fewer breaks in m are 5% likely
            assert binom.cdf(broken, audited, upper) == pytest.approx(0.05, abs=1e-9)


def test_the_bound_is_fast_less_the_survivors_share_times_u():
    audit = AuditBound(examples=100, survivors=68, audited=5, broken=0)
    u = 1 - 0.05 ** (1 / 5)  # d = 0: (1 - U)^m = 5%
    assert audit.fast == 0.68 and audit.upper_break_rate == pytest.approx(u)
    assert audit.bound == pytest.approx(0.68 - 0.68 * u)
    assert AuditBound(449, 300, 0, 0).bound == 0.0  # no audit, no claim beyond 0
    assert AuditBound(449, 300, 30, 30).bound == 0.0
    assert AuditBound(5000, 2000, 200, 0).bound == pytest.approx(0.4 - 0.4 * (1 - 0.05 ** (1 / 200)))
    for wrong in ((100, 68, 5, 6), (100, 68, 69, 0), (100, 101, 5, 0), (0, 0, 0, 0)):
        with pytest.raises(ValueError):
            AuditBound(*wrong)


def test_a_fab_t_or_square_break_escalates_everything_an_apgd_t_break_only_apgd_t():
    assert escalated_stages([]) == ()
    assert escalated_stages(["apgd-t-rest"]) == ("apgd-t-rest",)
    for broke in (["fab-t"], ["square"], ["apgd-t-rest", "square"]):
        assert escalated_stages(broke) == AUDIT_STAGES
    with pytest.raises(ValueError, match="not audit stages"):
        escalated_stages(["apgd-ce"])


@pytest.mark.parametrize("robust", [0.3, 0.68, 0.95])
def test_the_examples_a_wide_bound_warning_names_bring_it_within_the_width(robust):
    from robeval.evaluation.fast.summary import BOUND_WIDTH, examples_for_width

    width, rate = BOUND_WIDTH / 100, 0.05

    def gap(n: int) -> float:
        survivors = round(robust * n)
        bound = AuditBound(n, survivors, int(rate * survivors), 0)
        return bound.fast - bound.bound

    n = examples_for_width(robust, rate, width)
    assert gap(int(n * 1.02)) <= width + 1e-3 < gap(n // 2)  # at the n it names the bound is that narrow, not before

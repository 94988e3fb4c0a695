"""The figures' style: intervals that are the records' bootstrap, a look per model that stays
distinct for 20 models, and no figure without information."""

from __future__ import annotations

import numpy as np
import pandas as pd

from robeval.report import plots, style
from robeval.report.paired import bootstrap_mean_ci


def test_error_bars_are_the_bootstrap_of_the_examples():
    hits = np.array([1] * 70 + [0] * 30)
    low, high = style.binomial_interval(70.0, 100)
    ref_low, ref_high = bootstrap_mean_ci(hits)  # resampling the records themselves
    assert low < 70.0 < high and abs(low - ref_low) <= 2.0 and abs(high - ref_high) <= 2.0
    wide, narrow = style.binomial_interval(70.0, 50), style.binomial_interval(70.0, 5000)
    assert narrow[1] - narrow[0] < (wide[1] - wide[0]) / 5
    assert style.binomial_interval(100.0, 40) == (100.0, 100.0)


def test_twenty_models_get_twenty_distinct_colours_and_looks():
    looks = [style.model_style(i) for i in range(20)]
    assert len({look["color"] for look in looks}) == 20
    assert len({(look["color"], look["marker"], look["linestyle"]) for look in looks}) == 20


def _summary(eps_values, top5=100.0):
    rows = []
    for model in ("a", "b"):
        rows.append(dict(model=model, attack="clean", eps="x", eps_value=eps_values[0], top1=99.0, top5=top5, n=50))
        for i, eps in enumerate(eps_values):
            for attack in ("pgd", "fmn"):
                rows.append(dict(model=model, attack=attack, eps=f"{i}/255", eps_value=eps, top1=80.0 - 10 * i,
                                 top5=top5, n=50))  # fmt: skip
    return pd.DataFrame(rows).assign(norm="Linf", protocol="standard")


def test_no_figure_without_information():
    assert plots.accuracy_vs_eps(_summary([8 / 255]), "top1") is None  # one eps: no curve
    fig = plots.accuracy_vs_eps(_summary([4 / 255, 8 / 255]), "top1")
    assert [ax.get_title() for ax in fig.axes] == ["PGD", "FMN"]
    assert plots.accuracy_vs_eps(_summary([4 / 255, 8 / 255]), "top5") is None  # flat, and FMN's top-5 is no attack's

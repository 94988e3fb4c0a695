"""The figures' style: intervals that are the records' bootstrap, a look per model that stays
distinct for 20 models, and no figure without information."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.colors import to_rgba

from robeval.report import plots, style
from robeval.results.statistics import binomial_interval, bootstrap_mean_ci


def test_error_bars_are_the_bootstrap_of_the_examples():
    hits = np.array([1] * 70 + [0] * 30)
    low, high = binomial_interval(70.0, 100)
    ref_low, ref_high = bootstrap_mean_ci(hits)  # resampling the records themselves
    assert low < 70.0 < high and abs(low - ref_low) <= 2.0 and abs(high - ref_high) <= 2.0
    wide, narrow = binomial_interval(70.0, 50), binomial_interval(70.0, 5000)
    assert narrow[1] - narrow[0] < (wide[1] - wide[0]) / 5
    assert binomial_interval(100.0, 40) == (100.0, 100.0)


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


def _colours(fig) -> dict[str, tuple]:
    """Each legend entry's colour (a bar's fill, a line's stroke), the intervals' grey entry left out."""
    handles = {label: handle for ax in fig.axes for handle, label in zip(*ax.get_legend_handles_labels())}
    found = {}
    for label, handle in handles.items():
        if hasattr(handle, "patches"):  # a bar chart's bars
            found[label] = tuple(handle.patches[0].get_facecolor())
        elif not label.startswith("95%"):  # a line, or a line with error bars
            found[label] = to_rgba(getattr(handle, "lines", [handle])[0].get_color())
    return found


def _row(model: str, attack: str, eps: int, top1: float, corruption: str = "", severity: int = 0) -> dict:
    return dict(model=model, attack=attack, eps=f"{eps}/255", eps_value=eps / 255, top1=top1, top5=99.0, n=50,
                corruption=corruption, severity=severity, norm="Linf", protocol="standard")  # fmt: skip


def test_a_model_keeps_its_look_in_every_figure_whichever_models_each_has():
    from robeval.report.plots import convergence_figure
    from robeval.results.convergence import LAST_TENTH

    rows = [_row(m, a, e, 90.0 - e - 20 * (a == "pgd")) for m in "abc" for e in (4, 8) for a in ("clean", "pgd")]
    rows = [r for r in rows if r["model"] != "c" or r["eps"] == "8/255"]  # c at 8/255 only
    rows += [_row(m, "gaussian_noise@1", 8, 50.0, "gaussian_noise", 1) for m in "ca"]  # c first among the conditions
    summary = pd.DataFrame(rows)
    expected = {m: to_rgba(style.model_style(i)["color"]) for i, m in enumerate("abc")}
    drawn = plots.figures(summary)
    assert set(_colours(drawn["bars_eps_4_255"])) == {"a", "b"} and set(_colours(drawn["bars_eps_8_255"])) == set("abc")
    assert set(_colours(drawn["accuracy_vs_severity"])) == {"c", "a"}
    for stem, fig in drawn.items():
        assert _colours(fig) == {m: expected[m] for m in _colours(fig)}, stem
    curves = pd.DataFrame([dict(model="c", eps="8/255", attack="pgd", point=p, position=p, robust_top1=50.0,
                                axis="iterations", setting="steps 10") for p in (0, LAST_TENTH, LAST_TENTH + 1)])  # fmt: skip
    assert _colours(convergence_figure(curves)) == {"c": expected["a"]}  # alone, c would take the first colour
    assert _colours(convergence_figure(curves, summary["model"])) == {"c": expected["c"]}  # the table's: its own

"""``robeval report``: one self-contained HTML page, opened offline in headless Chromium (no console
error, no blocked fetch; the table, figures, checklist and gallery render at real sizes; sorting
works), and its bad input."""

from __future__ import annotations

import re

import pytest

from robeval.store import Store

from .conftest import one_line_error, require_tool
from .hostile import CHROMIUM, open_in_chromium, screenshot


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    from robeval.api import evaluate_full

    from .conftest import FAST_SETTINGS

    store = tmp_path_factory.mktemp("report") / "s.sqlite"
    result = evaluate_full(
        models=["digits-deit", "digits-deit-elliptical"], n_examples=12, eps="4/255,8/255",
        attacks="fgsm,pgd,square", settings={**FAST_SETTINGS, "pgd": {"steps": 5}}, store=str(store), progress=False,
    )  # fmt: skip
    return store, result.run_id


@pytest.fixture(scope="module")
def report(demo_run, tmp_path_factory):
    from .conftest import invoke

    store, run_id = demo_run
    out = tmp_path_factory.mktemp("page") / "report.html"
    result = invoke(["report", run_id, "--store", str(store), "--out", str(out)], out.parent)
    assert result.returncode == 0, result.stderr
    return out


def test_the_page_is_one_file_that_fetches_nothing(report):
    page = report.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["'](https?:)?//""", page)  # no remote source of any kind
    assert "<link" not in page and "@import" not in page
    assert not re.search(r"url\(\s*['\"]?(?!#)", page)  # only the figures' own url(#clip) references
    assert "default-src 'none'" in page  # and the page's policy forbids any other source
    for section in ("tables", "figures", "convergence", "checklist", "efficiency", "passes", "compare", "gallery",
                    "configuration"):
        assert f'<section id="{section}"' in page, section
    assert page.count("<svg") >= 4 and "data:image/png;base64," in page
    assert "regenerated predictions equal the stored records" in page


def test_the_passes_table_gives_the_records_means(demo_run, report):
    from html.parser import HTMLParser

    store, run_id = demo_run
    db = Store(store)
    means = db.records(run_id).groupby(["model", "eps", "attack"])[["forward_passes", "backward_passes"]].mean()
    db.close()

    class Cells(HTMLParser):  # the body cells of the section's table, row by row
        inside, cell, rows = False, False, []

        def handle_starttag(self, tag, attrs):
            self.inside = self.inside or (tag == "section" and ("id", "passes") in attrs)
            if self.inside and tag == "tr":
                self.rows.append([])
            self.cell = self.inside and tag == "td"

        def handle_endtag(self, tag):
            self.inside, self.cell = self.inside and tag != "section", False

        def handle_data(self, data):
            if self.cell:
                self.rows[-1].append(data)

    parser = Cells()
    parser.feed(report.read_text())
    shown = {tuple(r[:3]): (float(r[3]), float(r[4])) for r in parser.rows if len(r) == 5}
    assert set(shown) == set(means.index)
    for key, row in means.iterrows():
        assert shown[key] == pytest.approx((row.forward_passes, row.backward_passes), abs=0.006)  # 2 decimals shown


def test_chromium_opens_it_offline_without_errors_and_every_section_renders(report, tmp_path):
    require_tool(CHROMIUM, "Chromium", "apt-get install chromium; .ci/run installs it")
    seen = open_in_chromium(report, tmp_path)
    assert seen["errors"] == [] and seen["foreign"] == [] and seen["scripts"] == 2  # the probe and the page's own
    assert all(w > 600 and h > 100 for w, h in seen["sections"].values()), seen["sections"]
    assert seen["tables"] >= 3 and seen["first_table"][0] > 600 and seen["first_table"][1] > 100
    assert len(seen["figures"]) >= 4 and all(w > 400 and h > 150 for w, h in seen["figures"]), seen["figures"]
    natural_w, natural_h, shown_w, shown_h = seen["gallery"]
    assert natural_w > 300 and natural_h > 100 and shown_w > 300 and shown_h > 100
    assert seen["sorted"][0] == "ascending" and seen["sorted"][1] != seen["sorted"][2]  # the model column sorted
    shot = tmp_path / "report.png"
    screenshot(report, shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_bad_input_is_one_line(demo_run, cli, tmp_path):
    store, run_id = demo_run
    assert one_line_error(cli("report", "nope", "--store", str(store), "--out", "r.html"), "nope")
    assert one_line_error(cli("report", run_id, "--store", str(tmp_path / "none.sqlite"), "--out", "r.html"), "not found")
    assert one_line_error(cli("report", run_id, "--store", str(store), "--out", "r.md"), "HTML file")
    (tmp_path / "a-file").write_text("not a folder")
    assert one_line_error(cli("report", run_id, "--store", str(store), "--out", str(tmp_path / "a-file" / "r.html")))
    empty = Store(tmp_path / "e.sqlite")
    empty_id = empty.create_run({"models": ["digits-deit"]}, {}, "standard")
    empty.close()
    assert one_line_error(cli("report", empty_id, "--store", str(tmp_path / "e.sqlite"), "--out", "r.html"), "no stored records")
    assert not (tmp_path / "r.html").exists()



def seeded(model: str, seed: int, path, **recipe: str) -> str:
    """``model``'s shipped weights moved by noise of ``seed`` (tests/test_members.py), its recipe recorded as
    robeval's own files record it: the zoo's, with ``seed`` and ``recipe``'s changes."""
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    from robeval.zoo import zoo_path

    from .test_members import moved_member

    moved = moved_member(model, seed, path)
    with safe_open(str(zoo_path(model)), "pt") as shipped:
        metadata = dict(shipped.metadata() or {})
    save_file(load_file(str(moved)), str(moved), metadata={**metadata, "seed": str(seed), **recipe})
    return str(moved)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Run A at 4/255: digits-deit and digits-deit-elliptical, 3 members each (the shipped recipe, seeds 0-2);
    run B at 4/255 and 8/255: digits-deit of 3 members trained otherwise (30 epochs) beside the same
    elliptical members.  Their report (B, A) names A's models "digits-deit (A)" and "digits-deit-elliptical (A)"."""
    from robeval.api import evaluate_full

    from .conftest import invoke

    folder = tmp_path_factory.mktemp("two-runs")
    ell = [seeded("digits-deit-elliptical", s, folder / f"ell-seed{s}.safetensors") for s in range(3)]
    fair = [seeded("digits-deit", s, folder / f"deit-seed{s}.safetensors") for s in range(3)]
    careless = [seeded("digits-deit", s, folder / f"careless-seed{s}.safetensors", epochs="30") for s in (10, 11, 12)]
    common = dict(models=["digits-deit", "digits-deit-elliptical"], n_examples=16, attacks="fgsm,pgd",
                  settings={"pgd": {"steps": 2}}, store=str(folder / "s.sqlite"), progress=False)  # fmt: skip
    a = evaluate_full(checkpoints={"digits-deit": fair, "digits-deit-elliptical": ell}, eps="4/255", **common)
    b = evaluate_full(checkpoints={"digits-deit": careless, "digits-deit-elliptical": ell}, eps="4/255,8/255", **common)
    out = folder / "report.html"
    result = invoke(["report", b.run_id, a.run_id, "--store", common["store"], "--out", str(out), "--gallery-size", "0"],
                    folder)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return folder / "s.sqlite", a.run_id, b.run_id, out.read_text()


def _section(page: str, name: str) -> str:
    return page[page.index(f'<section id="{name}"') :].split("</section>", 1)[0]


def test_a_report_of_two_runs_compares_every_pair_each_on_its_own_runs_records(two_runs):
    import html

    from robeval.report.comparison import comparison
    from robeval.report.escaping import html as escape
    from robeval.results.runs import load_run

    store, a, b, page = two_runs
    compared = _section(page, "compare")
    labels = ["digits-deit", "digits-deit-elliptical", f"digits-deit ({a})", f"digits-deit-elliptical ({a})"]
    headings = [html.unescape(h) for h in re.findall(r"<h3>(.*?)</h3>", compared)]
    assert sorted(headings) == sorted(f"{y} vs {x}" for i, x in enumerate(labels) for y in labels[i + 1 :])
    refs = dict(zip(labels, [f"{b}:digits-deit", f"{b}:digits-deit-elliptical", f"{a}:digits-deit",
                             f"{a}:digits-deit-elliptical"]))  # fmt: skip
    db = Store(store)
    loaded = {run: load_run(db, run) for run in (a, b)}
    for heading in headings:  # each verdict as robeval compare gives it for exactly that pair
        later, earlier = heading.split(" vs ")
        found = comparison(db, refs[earlier], refs[later], loaded=loaded)
        assert found.test == "members" and all(escape(line) in compared for line in found.verdicts), heading
    db.close()
    fair = compared.split(f"<h3>digits-deit-elliptical ({a}) vs digits-deit ({a})</h3>", 1)[1].split("<h3>")[0]
    assert f"{a}:digits-deit-elliptical - {a}:digits-deit = " in fair and "8/255" not in fair  # run A's records only
    assert "Every model against every other" in compared


def test_a_renamed_models_members_name_their_file_and_seed(two_runs):
    _, a, _, page = two_runs
    members = _section(page, "members")
    renamed = members.split(f"<h3>digits-deit ({a})</h3>", 1)[1].split("<h3>")[0]
    assert all(f"{i + 1}: deit-seed{i}.safetensors (seed {i})" in renamed for i in range(3))
    careless = members.split("<h3>digits-deit</h3>", 1)[1].split("<h3>")[0]
    assert all(f"{i + 1}: careless-seed{s}.safetensors (seed {s})" in careless for i, s in enumerate((10, 11, 12)))


def _legend_colours(figure: str) -> dict[str, str]:
    """Each model's colour in an inline SVG figure's legend: the first colour drawn before its label."""
    import html

    legend, found, start = figure[figure.index('id="legend_') :], {}, 0
    for text in re.finditer(r"<text[^>]*>([^<]*)</text>", legend):
        colours = re.findall(r"(?:stroke|fill): (#[0-9a-f]{6})", legend[start : text.start()])
        label, start = html.unescape(text.group(1)), text.end()
        if colours and not label.startswith("95%"):
            found[label] = colours[0]
    return found


def test_each_model_has_one_colour_in_every_figure_of_the_page(two_runs):
    _, a, _, page = two_runs
    figures = dict(re.findall(r'<figure data-figure="([^"]+)">(.*?)</figure>', page, re.S))
    assert {"robust_top1_vs_eps", "bars_eps_4_255", "bars_eps_8_255", f"convergence-{a}"} <= set(figures)
    seen: dict[str, set[str]] = {}
    for figure in figures.values():
        for label, colour in _legend_colours(figure).items():
            seen.setdefault(label, set()).add(colour)
    assert len(seen) == 4 and all(len(colours) == 1 for colours in seen.values()), seen
    assert len({c for colours in seen.values() for c in colours}) == 4  # and no two models share one
    assert set(_legend_colours(figures[f"convergence-{a}"])) == {f"digits-deit ({a})", f"digits-deit-elliptical ({a})"}


def test_no_paper_table_cell_wraps_at_1400_pixels(two_runs, tmp_path):
    """Headless Chromium opens the page 1,400 pixels wide with a probe (tests/hostile.py's CELL_LINES) that
    finds every cell of the paper tables whose text runs onto a second line box."""
    from .hostile import CELL_LINES

    require_tool(CHROMIUM, "Chromium", "apt-get install chromium; .ci/run installs it")
    page = tmp_path / "report.html"
    page.write_text(two_runs[3])
    seen = open_in_chromium(page, tmp_path, CELL_LINES, width=1400)
    assert seen["width"] == 1400 and seen["cells"] >= 20 and len(seen["tables"]) == 2
    assert seen["wrapped"] == []  # mean ± std on one line in every cell
    assert all(width <= box for width, box in seen["tables"]), seen["tables"]  # each table fits its page: no scrolling
    screenshot(page, tmp_path / "report-1400.png", width=1400)


def test_a_model_the_table_shows_from_two_runs_is_compared_in_each_run_apart(two_runs):
    """Run A's elliptical members again at 8/255 alone (run C): the table shows them as one model of both
    runs, the comparison pairs run A's with run A's digits-deit only, at run A's eps, and says which run."""
    from robeval.api import evaluate_full
    from robeval.report.html_page import Page, compared_pairs, paired
    from robeval.results.runs import combine, load_run

    store, a, _, _ = two_runs
    ell = [str(store.parent / f"ell-seed{s}.safetensors") for s in range(3)]
    c = evaluate_full(models=["digits-deit-elliptical"], checkpoints={"digits-deit-elliptical": ell}, eps="8/255",
                      n_examples=16, attacks="fgsm,pgd", settings={"pgd": {"steps": 2}}, store=str(store),
                      progress=False)  # fmt: skip
    db = Store(store)
    runs = [load_run(db, a), load_run(db, c.run_id)]
    page = Page(db, runs, combine(runs), gallery_size=0)
    assert set(page.summary["model"]) == {"digits-deit", "digits-deit-elliptical"}  # one label over both runs
    ((first, second),) = compared_pairs(page, "digits-deit")
    assert (first.ref, second.ref) == (f"{a}:digits-deit", f"{a}:digits-deit-elliptical")
    section = paired(page)
    db.close()
    assert section is not None and section.title == "Every model against every other"
    assert f"<h3>digits-deit-elliptical [run {a}] vs digits-deit</h3>" in section.body
    assert f"{a}:digits-deit-elliptical - {a}:digits-deit" in section.body and "8/255" not in section.body

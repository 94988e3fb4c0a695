"""``robeval report``: one self-contained HTML page, opened offline in headless Chromium (no console
error, no blocked fetch; the table, figures, checklist and gallery render at real sizes; sorting
works), and its bad input."""

from __future__ import annotations

import re

import pytest

from robeval.results.store import Store

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


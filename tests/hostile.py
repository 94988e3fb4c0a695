"""A results store as someone else could hand it over: a real run whose names (models, run id, data)
were rewritten to hold every format's markup, and a headless Chromium that opens a page and reports
what ran on it.  Used by tests/test_hostile_text.py and tests/test_html_report.py."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)

# Each name holds what some format reads as markup: a spreadsheet formula at its start, Markdown
# (table bars, emphasis, code, links, math, raw HTML), LaTeX specials, rich markup, and script.
HOSTILE_MODEL = (
    '=HYPERLINK("http://e.example")|<script>document.title="PWNED"</script> *a* _b_ `c` '
    "[d](http://e.example) & \\textbf{x} a\\b ~ # % ^ {y} [bold]z[/]"
)
HOSTILE_OTHER = '-2+3 <img src=x onerror="document.title=1"> | @SUM(1)'
HOSTILE_RUN = '"><svg onload="document.title=2">'
HOSTILE_DATA = "/data/<b>x</b>|+cmd/val"
PLAIN = ("digits-deit", "digits-deit-elliptical")


def rewrite_names(store: Path, names: dict[str, str], run_id: str, data: str) -> None:
    """Rename the store's one run to ``run_id``, its models as ``names`` says and its data, everywhere
    they are written (records, units, curves, the run's configuration and facts)."""
    db = sqlite3.connect(store)
    (old,) = db.execute("SELECT id FROM runs").fetchone()
    for table in ("records", "units", "curves"):
        for before, after in names.items():
            db.execute(f"UPDATE {table} SET model = ? WHERE model = ?", (after, before))
        db.execute(f"UPDATE {table} SET run_id = ?", (run_id,))
    config, info = (json.loads(text) for text in db.execute("SELECT config, info FROM runs").fetchone())
    config["models"] = [names.get(m, m) for m in config["models"]]
    config["data"] = data
    info["models"] = {names.get(m, m): facts for m, facts in info.get("models", {}).items()}
    db.execute("UPDATE runs SET id = ?, config = ?, info = ? WHERE id = ?",
               (run_id, json.dumps(config), json.dumps(info), old))  # fmt: skip
    db.commit()
    db.close()


def hostile_store(folder: Path) -> Path:
    """A finished two-model run (FGSM and PGD on 8 digits) whose names are the hostile ones above."""
    import robeval

    store = folder / "hostile.sqlite"
    robeval.evaluate_full(models=list(PLAIN), n_examples=8, attacks="fgsm,pgd", settings={"pgd": {"steps": 2}},
                          store=str(store), progress=False)  # fmt: skip
    rewrite_names(store, dict(zip(PLAIN, (HOSTILE_MODEL, HOSTILE_OTHER))), HOSTILE_RUN, HOSTILE_DATA)
    return store


# Put first in <head> (and allowed by the page's policy through its hash): records every error,
# console.error and blocked source, and on load writes what the page is into <pre id=probe>.
PROBE = """
window.__seen = [];
window.addEventListener('error', e => window.__seen.push('error: ' + e.message));
document.addEventListener('securitypolicyviolation', e => window.__seen.push('blocked: ' + e.violatedDirective + ' ' + e.blockedURI));
const __error = console.error; console.error = (...a) => { window.__seen.push('console: ' + a.join(' ')); __error(...a); };
window.addEventListener('load', () => {
  const size = el => { if (!el) return null; const r = el.getBoundingClientRect(); return [r.width, r.height]; };
  const out = {errors: window.__seen, sections: {}, figures: [], gallery: null, sorted: null, title: document.title};
  out.scripts = document.querySelectorAll('script').length;
  out.foreign = Array.from(document.querySelectorAll('*')).filter(el =>
    Array.from(el.attributes).some(a => a.name.startsWith('on')) || (el.tagName === 'IMG' && !el.src.startsWith('data:'))
  ).map(el => el.outerHTML.slice(0, 80));
  document.querySelectorAll('section[data-section]').forEach(s => out.sections[s.id] = size(s));
  out.tables = document.querySelectorAll('table.sortable').length;
  out.first_table = size(document.querySelector('#tables table'));
  document.querySelectorAll('figure svg').forEach(f => out.figures.push(size(f)));
  const img = document.querySelector('.gallery img');
  if (img) out.gallery = [img.naturalWidth, img.naturalHeight].concat(size(img));
  const table = document.querySelector('#tables table.sortable');
  const head = table.tHead.rows[table.tHead.rows.length - 1].cells[0];
  const before = table.tBodies[0].rows[0].cells[1].textContent;
  head.click();
  out.sorted = [head.getAttribute('aria-sort'), before, table.tBodies[0].rows[0].cells[1].textContent];
  out.text = document.body.innerText;
  const pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
"""
# On load: per paper table (the report's #tables section) its width and its box's, and the text of every
# cell whose content runs onto a second line: a line box lying wholly below the cell's first one.
CELL_LINES = """
window.addEventListener('load', () => {
  const out = {width: window.innerWidth, cells: 0, wrapped: [], tables: []};
  document.querySelectorAll('#tables table').forEach(table => {
    out.tables.push([table.getBoundingClientRect().width, table.closest('.scroll').clientWidth]);
    table.querySelectorAll('td').forEach(td => {
      const range = document.createRange(); range.selectNodeContents(td);
      const lines = Array.from(range.getClientRects()).filter(r => r.width > 0 && r.height > 0);
      out.cells += 1;
      if (lines.some(r => r.top >= lines[0].bottom - 1)) out.wrapped.push(td.textContent);
    });
  });
  const pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
"""


def flags(width: int = 1280) -> list[str]:
    return [CHROMIUM or "chromium", "--headless", "--no-sandbox", "--disable-gpu", f"--window-size={width},1600",
            "--host-resolver-rules=MAP * ~NOTFOUND", "--virtual-time-budget=10000"]  # fmt: skip


def probed_copy(page: Path, folder: Path, probe: str = PROBE) -> Path:
    """``page`` with the probe first in its head and the probe's hash added to its script policy (the page's
    own policy otherwise as it is: any other script stays forbidden)."""
    digest = base64.b64encode(hashlib.sha256(probe.encode()).digest()).decode()
    text = page.read_text().replace("script-src ", f"script-src 'sha256-{digest}' ", 1)
    copy = folder / f"probed-{page.name}"
    copy.write_text(text.replace("<head>", f"<head><script>{probe}</script>", 1))
    return copy


def open_in_chromium(page: Path, folder: Path, probe: str = PROBE, width: int = 1280) -> dict:
    """What the probe saw when headless Chromium opened ``page`` offline in a window ``width`` pixels wide
    (:data:`PROBE`: errors, blocked sources, sizes, scripts, elements with handlers or remote images, the
    document's title and text; :data:`CELL_LINES`: the paper tables' cells that wrap)."""
    dom = subprocess.run([*flags(width), "--dump-dom", probed_copy(page, folder, probe).as_uri()],
                         capture_output=True, text=True, timeout=180)  # fmt: skip
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stderr[-2000:]
    return json.loads(html.unescape(found.group(1)))


def screenshot(page: Path, shot: Path, width: int = 1280) -> None:
    subprocess.run([*flags(width), f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=180)

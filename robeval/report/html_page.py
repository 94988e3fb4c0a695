"""``robeval report`` (docs/results.md, "The report"): a Jinja2 template (``templates/report.html.j2``) filled
with the sections of :data:`SECTIONS`, in their order, each built from the same code the other commands use.

The Content-Security-Policy allows one script, the page's own (``templates/sort.js``, by its SHA-256;
docs/hardening.md, rule 9): a script that text from a store could smuggle in would not run even if it
escaped its escaping (robeval.report.escaping.html, the one escaper of every text on the page).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd
from markupsafe import Markup

from ..core.errors import UserError
from ..core.records import EFFICIENCY_COLUMNS, key_model
from ..evaluation.protocols import refusal
from ..models.names import registered_spec
from ..models.registry import GIVEN
from ..references import split_label
from ..results.convergence import curves
from ..results.runs import StoredRun, combine, minimal_norms, model_labels, table_records
from ..results.soundness import judge_stored
from ..results.summary import passes_per_image
from ..store import Store
from . import plots, style
from .checklist import CHECKLIST_INTRO, checklist_section
from .comparison import comparison
from .document import Document, Heading, Paragraph, Table, to_html
from .escaping import html as escape
from .paper import render


@dataclass
class Section:
    id: str
    title: str
    body: Markup
    note: str = ""


@dataclass
class Page:
    """What the sections read: the store, the runs and their combined summary."""

    store: Store
    runs: list[StoredRun]
    summary: pd.DataFrame
    gallery_attack: str | None = None  # None: the first per-example white-box attack of the first run
    gallery_size: int = 6
    baseline: str | None = None  # the model every other is compared with (None: the first run's first)
    code: tuple[str, ...] = ()  # ``--model REFERENCE[=NAME]``: the user's code the gallery may import
    labels: list[dict[str, str]] = field(init=False)  # per run, each model's label in the tables

    def __post_init__(self) -> None:
        self.labels = model_labels(self.runs)

    def facts(self, label: str) -> dict[str, Any]:
        """What its (first) run recorded of the model the tables show as ``label`` (a model told apart by its
        run id included: its facts are its own run's)."""
        run, model = next((run, model) for run, labels in zip(self.runs, self.labels) for model, shown in labels.items()
                          if shown == label)  # fmt: skip
        return run.info.get("models", {}).get(key_model(model)[0], {})


def paper_table(page: Page) -> Section:
    note = (
        "Top-1 / top-5 accuracy (%) per model and attack; a column's best in bold where the claim test separates it "
        "from the runner-up, else marked †; click a header to sort. "
        "Minimum-norm and distribution-shift tables follow where the runs have them."
    )
    records = table_records(page.runs)  # each model's records as the table names it, of its own run
    return Section("tables", "Paper table", Markup(render(page.summary, "html", records=records)), note)


def members(page: Page) -> Section | None:
    """Each model of several members: every member's own top-1 / top-5 per eps and attack beside its
    checkpoint and seed (the table's mean ± std and the figures' intervals are made of these)."""
    rows = page.summary[page.summary["members"].fillna(1) > 1] if "members" in page.summary else page.summary.iloc[0:0]
    if rows.empty:
        return None
    document: Document = [
        block
        for label, group in rows.groupby("model", sort=False)
        for block in (Heading(str(label), 3), Table.of(member_table(group, page.facts(str(label))), ("member",)))
    ]
    return Section(
        "members", "Every member", Markup(to_html(document)),
        "Per model of several members (checkpoints of one training procedure, one per seed), each member's top-1 / "
        "top-5 (%) under each attack: the tables show their mean ± sample std, the figures their 95% interval for "
        "seeds and examples with each member as a dot.",
    )  # fmt: skip


def member_table(rows: pd.DataFrame, facts: dict[str, Any]) -> pd.DataFrame:
    """One model's members as rows (their checkpoint and seed), its (eps, attack) as columns."""
    known = facts.get("members") or []
    count = int(rows["members"].max())
    out = pd.DataFrame({"member": [_member_name(i, known) for i in range(count)]})
    for r in rows.to_dict("records"):
        pairs = zip(r["member_top1"], r["member_top5"])
        out[f"{r['attack']} {r['eps']}"] = [f"{a:.2f} / {b:.2f}" for a, b in pairs]
    return out


def _member_name(index: int, known: list) -> str:
    """A member as the table names it: its number, its checkpoint file and, where it records one, its seed."""
    facts = known[index] if index < len(known) and isinstance(known[index], dict) else {}
    seed = (facts.get("recipe") or {}).get("seed")
    file = Path(str(facts.get("checkpoint") or "")).name
    return f"{index + 1}: {file}" + (f" (seed {seed})" if seed is not None else "")


def figures(page: Page) -> Section | None:
    found = plots.figures(page.summary, minimal_norms(page.runs))
    if not found:
        return None
    body = "".join(
        f'<figure data-figure="{escape(stem)}">{style.svg_text(fig)}<figcaption>{escape(stem)}: the same figure as '
        f"<code>robeval plot</code> writes ({', '.join(style.FORMATS)}); {escape(style.interval_note(page.summary))}"
        "</figcaption></figure>"
        for stem, fig in found.items()
    )
    return Section("figures", "Figures", Markup(body))


def convergence(page: Page) -> Section | None:
    parts = []
    for run, labels in zip(page.runs, page.labels):  # the models as the tables name them, in their colours
        fig = plots.convergence_figure(curves(page.store, run.run_id).replace({"model": labels}), page.summary["model"])
        if fig is not None:
            parts.append(f'<figure data-figure="convergence-{escape(run.run_id)}">{style.svg_text(fig)}<figcaption>run '
                         f"{escape(run.run_id)}: robust top-1 along each attack's iterations or queries</figcaption>"
                         "</figure>")  # fmt: skip
    if not parts:
        return None
    return Section(
        "convergence", "Attack convergence", Markup("".join(parts)),
        "Robust top-1 against iterations / queries; still falling at the end means more iterations would "
        "find more adversarial examples (the checklist's convergence indicator reads the last 10%).",
    )  # fmt: skip


def checklist(page: Page) -> Section:
    """Each run of the page judged with its evidence runs (those made for it are not judged apart), as
    ``robeval check --report`` judges it."""
    ids = {run.run_id for run in page.runs}
    judged = [judge_stored(page.store, r) for r in page.runs if r.config.get("evidence_for") not in ids]
    body = Markup("".join(to_html(checklist_section(one)) for one in judged))
    return Section("checklist", "Soundness checklist", body, CHECKLIST_INTRO)


def _registered(model: str, meta: dict[str, Any]) -> bool:
    """Whether ``model`` is a registration, as its run recorded it (a run stored before that: asked of the
    registry, whose plugins and model sources may import torch)."""
    if "registered" in meta:
        return bool(meta["registered"])
    return not meta.get("source") and registered_spec(model) is not None


def _efficiency_rows(page: Page) -> tuple[pd.DataFrame, list[str]]:
    """Per model the page's rows evaluate (the summary's ``base_model``) its parameters and FLOPs per image,
    as the first run that has them stored them (every run counts them, and says whether the model is a
    registration); a registered model of a run stored before they were counted is counted now, on the
    CPU (the one case the report builds a network); and the registered names (for the line that says
    how to time them)."""
    rows, names = [], []
    stored = [run.info.get("models", {}) for run in page.runs]
    for model in dict.fromkeys(page.summary["base_model"]):
        meta: dict[str, Any] = next((models[model] for models in stored if model in models), {})
        registered = _registered(model, meta)
        if registered and model not in names:
            names.append(model)
        if meta.get("gflops_per_image") is not None or meta.get("source"):
            params = meta.get("params")
            rows.append({"model": model, "params_M": None if params is None else round(params / 1e6, 4),
                         "gflops_per_image": meta.get("gflops_per_image")})  # fmt: skip
        elif registered:
            from ..evaluation.profiling import static_efficiency  # builds the network: torch

            rows.append(static_efficiency([model]).iloc[0].to_dict())
    return pd.DataFrame(rows, columns=EFFICIENCY_COLUMNS).drop_duplicates("model"), names


def efficiency(page: Page) -> Section:
    table, names = _efficiency_rows(page)
    return Section(
        "efficiency", "Efficiency", Markup(to_html([Table.of(table, ("model",))])),
        "Parameters and FLOPs per image (matrix products and attention, as robeval profile counts them, counted "
        "by the model's run); speed and memory need timing: robeval profile "
        f"{' '.join('-m ' + n for n in names)}",
    )  # fmt: skip


def passes(page: Page) -> Section | None:
    rows = [
        {"model": model, "eps": eps, "attack": attack, "forward": p["forward"], "backward": p["backward"]}
        for model, by_eps in passes_per_image(page.summary).items()
        for eps, by_attack in by_eps.items()
        for attack, p in by_attack.items()
    ]
    if not rows:
        return None
    return Section(
        "passes", "Model passes per image", Markup(to_html([Table.of(pd.DataFrame(rows), ("model", "eps", "attack"))])),
        "Forward and backward image passes through the model per example (means of the records' counts; an "
        "attack's include the records' own pass): times the cost of one pass on a machine, the run's cost there.",
    )  # fmt: skip


def baseline_of(run: StoredRun, wanted: str | None) -> str:
    """The model the report compares every other with: ``wanted`` (one line when the run lacks it), or
    the run's first model."""
    models = list(dict.fromkeys(run.summary["model"]))
    if wanted is not None and wanted not in models:
        raise UserError(f"--baseline {wanted}: not a model of run {run.run_id} ({', '.join(models)})")
    return wanted or models[0]


@dataclass(frozen=True)
class Compared:
    """A model of the page as its tables key it: its run, its name there and its label in the tables, and
    the eps it was evaluated at."""

    run_id: str
    model: str
    label: str
    eps: frozenset[str]

    @property
    def ref(self) -> str:
        return f"{self.run_id}:{self.model}"


def _entries(page: Page) -> list[Compared]:
    """Every (run, model) of the page, in the order of its tables' models."""
    order = list(dict.fromkeys(page.summary["model"]))
    found = [
        Compared(run.run_id, model, label, frozenset(run.summary.loc[run.summary["model"] == model, "eps"]))
        for run, labels in zip(page.runs, page.labels)
        for model, label in labels.items()
    ]
    return sorted(found, key=lambda e: order.index(e.label))


def compared_pairs(page: Page, baseline: str) -> list[tuple[Compared, Compared]]:
    """What the page compares, (A, B): of one run, every other model against ``baseline``; of several, every
    two models the tables tell apart (by run and label) that share an eps, the baseline's pairs first with
    it as A.  A label a table shows from two runs (one model at other eps) is two entries: each pair is
    tested on exactly its two runs' records, never on one model's records of two runs pooled."""
    entries = _entries(page)
    first = next(e for e in entries if e.run_id == page.runs[0].run_id and e.model == baseline)
    ordered = [first, *[e for e in entries if e is not first]]
    pairs = [(a, b) for i, a in enumerate(ordered) for b in ordered[i + 1 :] if a.label != b.label and a.eps & b.eps]
    return pairs if len(page.runs) > 1 else [(a, b) for a, b in pairs if a is first]


def _shown(entry: Compared, entries: list[Compared]) -> str:
    """An entry's label, with its run where the tables show the label from several runs."""
    twice = sum(e.label == entry.label for e in entries) > 1
    return f"{entry.label} [run {entry.run_id}]" if twice else entry.label


def _compared(page: Page, a: Compared, b: Compared, entries: list[Compared]) -> Markup:
    """B against A: its table (top-1) and the claim in words, or why not possible."""
    title = Heading(f"{_shown(b, entries)} vs {_shown(a, entries)}", 3)
    try:
        found = comparison(page.store, a.ref, b.ref, loaded={run.run_id: run for run in page.runs})
    except UserError as exc:
        return Markup(to_html([title, Paragraph(f"not possible: {exc}", css="note")]))
    wanted = [c for c in found.table.columns if not c.startswith("top5") and c != "top1_df"]
    said = [Paragraph(line, css="note") for line in found.verdicts + found.lines]
    return Markup(to_html([title, Table.of(found.table[wanted], ("eps", "attack")), *said]))


TESTS_SAID = (
    "on the same examples: differences B - A in top-1 points. One checkpoint a side: 95% paired bootstrap interval "
    "and exact McNemar p; several members a side: the means over members and a 95% interval for seeds and "
    "examples together (docs/results.md)."
)


def paired(page: Page) -> Section | None:
    baseline = baseline_of(page.runs[0], page.baseline)
    pairs, entries = compared_pairs(page, baseline), _entries(page)
    if not pairs:
        return None
    body = Markup("").join(_compared(page, a, b, entries) for a, b in pairs)
    if len(page.runs) == 1:
        note = (f"Each of the run's other models ({len(pairs)}; B) against the baseline {baseline} (A; robeval "
                f"report --baseline NAME names another) {TESTS_SAID}")  # fmt: skip
        return Section("compare", f"Every model against {baseline}", body, note)
    note = (
        f"Every two models of the tables (by run and label; {len(pairs)} pairs that share an eps), each tested on "
        f"its own two runs' records; {baseline} of run {page.runs[0].run_id} (A; --baseline NAME names another) "
        f"first. B against A {TESTS_SAID}"
    )
    return Section("compare", "Every model against every other", body, note)


GALLERY_PREFERENCE = ("pgd", "apgd-ce", "apgd-t", "fgsm", "spsa")  # the first the run has is drawn
NOT_REBUILT = (
    "the run's models are modules given from Python, which another process cannot build again "
    "(evaluate one as --model PATH.py:CALLABLE, and its gallery is drawn)"
)


def _given_from_python(run: StoredRun, model: str) -> bool:
    """Whether ``model`` of ``run`` was a module given from Python (nothing here can build it again)."""
    return str(run.info.get("models", {}).get(model, {}).get("source") or "").startswith(f"{GIVEN}:")


def default_gallery_attack(run: StoredRun) -> str | None:
    """The attack the report's gallery regenerates unless one is asked for: the first of the run's
    attacks that can be crafted again exactly (PGD first)."""
    attacks = list(run.config.get("attacks", []))
    ordered = [a for a in GALLERY_PREFERENCE if a in attacks] + [a for a in attacks if a not in GALLERY_PREFERENCE]
    return next((a for a in ordered if refusal(a, run.config) is None), None)


def examples(page: Page) -> Section | None:
    run = page.runs[0]
    attack = page.gallery_attack if page.gallery_attack is not None else default_gallery_attack(run)
    if page.gallery_size <= 0 or attack is None:
        return None
    evaluated = [m for m in run.config["models"] if m in set(run.records["model"])]
    models = [m for m in evaluated if not _given_from_python(run, m)]  # every model of the run it can build
    if not models:
        return Section("gallery", "Gallery", Markup(""), f"no gallery: {NOT_REBUILT}")
    eps = list(run.config["eps"])[0]
    from .gallery import gallery  # crafts the examples again: the one section that loads models (torch)

    try:
        # each model as the gallery asks for it: REFERENCE=NAME where this command line names its code
        drawn = [next((c for c in page.code if split_label(c)[1] == m or c == m), m) for m in models]
        shown = gallery(page.store, run.run_id, models=drawn, attack=attack, eps=eps, max_examples=page.gallery_size)
    except UserError as exc:
        return Section("gallery", "Gallery", Markup(""), f"no gallery: {exc}")
    png = base64.b64encode(shown.png(dpi=110)).decode()
    checks = "".join(f"<li>{escape(line)}</li>" for line in shown.report())
    body = f'<div class="gallery"><img alt="regenerated adversarial examples" src="data:image/png;base64,{png}"><ul>{checks}</ul></div>'
    left = [m for m in evaluated if m not in models]
    note = (
        f"Every model of the run ({', '.join(models)}"
        + (f"; not {', '.join(left)}: {NOT_REBUILT}" if left else "")
        + f"), {attack} at eps {eps} on run {run.run_id}: clean | adversarial | perturbation (amplified), crafted "
        "again from the stored seeds and checked against the records (a model of several members: its first); "
        f"robeval examples {run.run_id} --attack {attack} draws any other selection."
    )
    return Section("gallery", f"Gallery: {', '.join(models)} under {attack}", Markup(body), note)


def configuration(page: Page) -> Section:
    parts = []
    for run in page.runs:
        shown = {"status": run.status, "versions": run.info.get("versions", {}), "config": run.config}
        parts.append(f"<h3>Run {escape(run.run_id)}</h3><pre>{escape(json.dumps(shown, indent=2, default=str))}</pre>")
    return Section("configuration", "Configuration and versions", Markup("".join(parts)))  # (JSON: preformatted)


# the page's sections, in their order: each builder gives its section, or None where the runs have nothing for it
SECTIONS: tuple[Callable[[Page], Section | None], ...] = (
    paper_table, members, figures, convergence, checklist, efficiency, passes, paired, examples, configuration,
)  # fmt: skip


def html_report(store: Store, runs: list[StoredRun], **options: Any) -> str:
    """The page of ``runs`` (combined as ``robeval table`` combines them); ``options``: gallery_attack,
    gallery_size (0: no gallery), baseline (the model every other is compared with), code (the user's code
    the command line names, which the gallery may import)."""
    page = Page(store, runs, combine(runs), **options)
    baseline_of(runs[0], page.baseline)  # a model the run lacks: one line before any section is built
    sections = [s for s in (build(page) for build in SECTIONS) if s is not None]
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("robeval.report", "templates"), autoescape=True, undefined=jinja2.StrictUndefined
    )
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    script = environment.loader.get_source(environment, "sort.js")[0]  # type: ignore[union-attr]
    return environment.get_template("report.html.j2").render(
        title=f"robeval report: run{'s' if len(runs) > 1 else ''} {', '.join(r.run_id for r in runs)}",
        subtitle=f"{len(runs)} run(s) in {store.path}; written {stamp}",
        sections=sections,
        script=Markup(script),
        script_hash=script_hash(script),
    )


def script_hash(script: str) -> str:
    """A Content-Security-Policy source that allows exactly this inline script."""
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")

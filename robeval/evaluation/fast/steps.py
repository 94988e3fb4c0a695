"""An audited protocol's two passes as the engine's unit loop runs them: the pass and the audit units
(:func:`pass_step`), then, once every batch's audit is stored, escalation (:func:`second_pass`); see
docs/protocols.md, section fast, and docs/store.md (the audit units as resume points).  The stored
records are read back by rank 0 and sent to every worker, so all of them decide alike.  Then every
batch's units of the audit's stages (what every table reads) are written, each stage on what the ones
before it left robust:

* a stage not escalated: the audited examples keep what the audit did to them (its passes included),
  the other survivors keep their records, no passes spent;
* an escalated stage that draws per example (apgd-t-rest): it runs on the survivors the audit did not
  run it on (an example's outcome does not depend on the call's other rows, so the audited ones keep the
  audit's);
* an escalated stage that draws as AutoAttack's code draws (FAB-T, Square, ``Protocol.library_draws``):
  it runs on every survivor, the audited ones again, as AutoAttack's own call on them would; an audited
  example the audit fooled and this call did not stays fooled (an adversarial example found is never
  counted robust), the audit's passes added to the call's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core.eps import Eps
from ...core.records import RECORD_COLUMNS, Columns, audit_unit, audited_stage
from ...store import Store
from ..model_run import Batch, ModelRun
from ..plan import RunPlan
from ..progress import model_bars
from ..session import Session
from ..units import UnitRecords, carried_over, cascade_unit, run_unit
from .audit import AuditCounts, audit_sample

POINT = ("adv_top1", "adv_top5", "adv_pred", "linf", "l2")  # a record's outcome and the point it was measured at
PASSES = ("forward_passes", "backward_passes")


def pass_step(model: ModelRun, batch: Batch, eps: Eps, unit: str) -> UnitRecords:
    """A unit of the first pass (module docstring): an attack of the pass, or an audit unit."""
    stage = audited_stage(unit)
    if stage is None:
        return cascade_unit(model, batch, eps, unit)
    sample = batch.audits.get(eps.text)
    if sample is None:
        sample = batch.audits[eps.text] = sampled(model, batch, eps)
    done = cascade_unit(model, sample, eps, stage)  # its curve is left out: no table shows an audit unit
    records = {**done.records, "attack": [unit] * len(done.records["attack"])}
    return UnitRecords(model.key(eps.text, unit, batch.b), records, attacked=done.attacked)


def sampled(model: ModelRun, batch: Batch, eps: Eps) -> Batch:
    """The batch's examples the pass left robust that the audit samples, with their records after the pass."""
    after = batch.cascade[eps.text]
    survivors = [e for e, hit in zip(batch.examples, after["adv_top1"]) if hit]
    chosen = set(audit_sample(model.config.seed, survivors, model.plan.protocol.audit_rate))
    rows = [i for i, e in enumerate(batch.examples) if e in chosen]
    sample = batch.rows(rows)
    sample.cascade[eps.text] = {c: [v[i] for i in rows] for c, v in after.items()}
    return sample


@dataclass
class FirstPass:
    """What the second pass reads back of a model's stored units: per (eps, unit, batch) the records by
    example, of the pass's last attack, the audit units and the audit's stages stored already."""

    records: dict[tuple[str, str, int], dict[int, dict[str, Any]]]

    def rows(self, eps: str, unit: str, b: int) -> dict[int, dict[str, Any]]:
        return self.records.get((eps, unit, b), {})

    def columns(self, eps: str, unit: str, batch: Batch) -> Columns:
        """A stored unit's records in the order of the batch's examples."""
        rows = self.rows(eps, unit, batch.b)
        return {c: [rows[e][c] for e in batch.examples] for c in RECORD_COLUMNS}

    def audit(self, eps: str, stages: tuple[str, ...]) -> AuditCounts:
        """The audit at ``eps`` over every batch: how many it sampled, how many it had fooled after each stage."""
        units = [[r for (e, u, _), rows in self.records.items() if (e, u) == (eps, audit_unit(s)) for r in rows.values()]
                 for s in stages]  # fmt: skip
        return AuditCounts(stages, len(units[0]), tuple(sum(not r["adv_top1"] for r in rows) for rows in units))


def read_first_pass(store: Store, run_id: str, plan: RunPlan, model: ModelRun) -> FirstPass:
    """The stored units of ``model``'s member that the second pass reads."""
    stages, job = plan.protocol.audit_stages, model.job
    units = [plan.protocol.pass_end, *(audit_unit(s) for s in stages), *stages]
    grouped: dict[tuple[str, str, int], dict[int, dict[str, Any]]] = {}
    for record in store.unit_records(run_id, job.name, model.member.index, units):
        grouped.setdefault((record["eps"], record["attack"], int(record["batch"])), {})[int(record["example"])] = record
    return FirstPass(grouped)


def second_pass(session: Session, model: ModelRun, position: tuple[int, int]) -> None:
    """The audit's stages of every batch of ``model`` still to do, as the stored audit decides (module
    docstring); a block of its own, in which the model stops alone as in the first pass."""
    plan, job, ctx = session.plan, model.job, session.ctx
    stages = plan.protocol.audit_stages
    first = ctx.broadcast(read_first_pass(session.store, session.run_id, plan, model) if ctx.is_main else None)
    escalated = {e.text: first.audit(e.text, stages).escalated for e in plan.config.eps}
    todo = {b: [(e, a) for e, a in units if a in stages] for b, units in model.todo.items()}
    mine = [b for b in todo if todo[b]][ctx.rank :: ctx.world]
    with session.model_stops_alone(job) as log:
        model.log = log
        bars = [bar for bar in model_bars(model, mine, session.done) if bar.key[-1] in stages]
        session.reporter.start(bars, f"{job.name}: the audit's stages", position)
        for batch, eps, stage, started in session.units(model, mine, lambda batch: todo[batch.b]):
            session.write(stage_unit(model, batch, eps, stage, first, escalated), model, started)


def stage_unit(
    model: ModelRun, batch: Batch, eps: Eps, stage: str, first: FirstPass, escalated: dict[str, tuple[str, ...]]
) -> UnitRecords:
    """One audit stage's records on a batch (module docstring); ``escalated``: per eps, the stages that
    escalated."""
    stages = model.plan.protocol.audit_stages
    previous = stages[stages.index(stage) - 1] if stages.index(stage) else model.plan.protocol.pass_end
    before = batch.cascade.get(eps.text) or first.columns(eps.text, previous, batch)
    audited = first.rows(eps.text, audit_unit(stage), batch.b)
    again = stage in model.plan.protocol.library_draws
    survivors = [i for i, hit in enumerate(before["adv_top1"]) if hit]
    chosen = survivors if stage in escalated[eps.text] else []
    attacked = [i for i in chosen if again or batch.examples[i] not in audited]
    ran = run_unit(model, batch.rows(attacked), eps, stage) if attacked else None
    records = carried_over(before, stage, ran, attacked)
    rerun = set(attacked)
    for i, example in enumerate(batch.examples):
        if example in audited:
            with_audit(records, i, audited[example], ran=i in rerun)
    batch.cascade[eps.text] = records
    return UnitRecords(model.key(eps.text, stage, batch.b), records, attacked=len(attacked))


def with_audit(records: Columns, i: int, audited: dict[str, Any], ran: bool) -> None:
    """Row ``i`` with what the audit did to it: its record, or, where this unit's own call ran on it too,
    the audit's passes added and the audit's point where only the audit fooled it."""
    if not ran:
        for c in (*POINT, *PASSES, "fp32_top1"):
            records[c][i] = audited[c]
        return
    for c in PASSES:
        records[c][i] += audited[c]
    if records["adv_top1"][i] and not audited["adv_top1"]:
        for c in POINT:
            records[c][i] = audited[c]

"""The evaluation engine's loop (docs/layout.md names who does each step; members: docs/results.md).

A batch is the outer loop of a model's units because its clean pass, its images and a minimum-norm
attack's search serve every eps and attack on it (and under ``--cascade`` each attack follows the one
before it on the same batch).  Summaries and flags are made from the stored records by robeval.results,
so a finished run and a stored run are summarised by the same code.
"""

from __future__ import annotations

from ..data.examples import EvalData
from ..store import Store
from .conditions import evaluate_conditions
from .distributed import SINGLE, DistContext
from .fast.steps import pass_step, second_pass
from .plan import RunPlan
from .progress import Reporter
from .session import start_session
from .units import cascade_unit, run_unit


def evaluate_plan(
    plan: RunPlan, data: EvalData, store: Store, resume: str | None, reporter: Reporter, ctx: DistContext = SINGLE
) -> str:
    """Evaluate ``plan`` on ``data`` into ``store`` (``resume``: the id of a stored run to continue); returns
    the run's id.  A model that fails stops alone; Ctrl-C, SIGTERM or a full store leave the run resumable."""
    reporter = reporter if ctx.is_main else Reporter()
    session = start_session(plan, data, store, resume, reporter, ctx)
    audited = bool(plan.protocol.audit_stages)  # the fast protocol: a pass and an audit, then its stages
    step = pass_step if audited else cascade_unit if plan.config.cascade else run_unit
    with session.stopping():
        for position, job in enumerate(plan.jobs, 1):
            for member in job.members:
                if job.name in session.log.failed_models:  # a member that failed stops its model
                    break
                with session.model_stops_alone(job) as log:
                    model, mine = session.begin_model(job, member, log, (position, len(plan.jobs)))
                    for batch, eps, attack, started in session.units(model, mine, lambda batch: batch.units):
                        session.write(step(model, batch, eps, attack), model, started)
                    for unit in evaluate_conditions(model, mine, session.threads.look):
                        session.write(unit, model)
                if audited and job.name not in session.log.failed_models:  # every batch's audit is stored
                    second_pass(session, model, (position, len(plan.jobs)))
    return session.finish()

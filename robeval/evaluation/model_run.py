"""One model's share of a run: load it, attack every pending batch, hand each finished unit on.

A unit is (model, eps, attack, batch).  For each batch the clean pass runs once (under inference
mode) and is shared by every eps and attack (:mod:`.batch_attacks`); the shifted conditions run in
:mod:`.conditions`.  ``ModelEvaluation`` holds what the steps share, so each step is one short method.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import torch
from torch import nn

from ..data.examples import EvalData
from ..defaults import CLEAN
from ..errors import UserError
from ..models import load_model, wrap_given
from ..precision import strict_fp32
from ..threads import FixedThreads, ThreadGovernor
from .attack_guards import AttackBoundsError, Autocast, PassCounter, topk_hits
from .batch_attacks import AttackUnits, BatchAttack, attack_failure
from .conditions import ConditionContext, run_conditions
from .model_checks import model_checks
from .plan import ModelJob, RunPlan
from .precision_check import precision_check
from .unit_records import BatchOutcome, Deliver, ModelFailure, Unit, UnitCurve, add_clean_records, new_columns

MODEL_CHECK_EXAMPLES = 16  # randomness / softmax / gradient checks run on this many examples of the first batch


class ModelEvaluation:
    """Evaluate ``job`` of ``plan`` on ``data``: the loaded model, its attacks and the units still to do."""

    def __init__(
        self, job: ModelJob, plan: RunPlan, data: EvalData, done: set[Unit], need_checks: bool, source: Any = None
    ) -> None:
        self.job, self.plan, self.config = job, plan, plan.config
        self.device, self.batch_size = plan.device, plan.batch_size
        self.memory_format = torch.channels_last if self.config.channels_last else torch.contiguous_format
        self.model = self._load()
        self.data = data.for_model(self.model.meta)
        self.conditions = plan.conditions
        self.condition_names = {c.name for c in self.conditions}
        self.units = plan.units(job)
        self.clean_hits: dict[int, dict[int, tuple[bool, bool]]] = {}  # batch -> example -> clean top-1/top-5 hit
        self.todo = {
            b: [(e, a) for e in self.config.eps for a in self.units if (job.name, e.text, a, b) not in done]
            for b in range(self.data.num_batches(self.batch_size))
        }
        self.target = self._target()
        self.outcome = BatchOutcome()
        counted = PassCounter(self._crafting())
        check = precision_check(plan.precision, self.target, len(self.data.indices), self.config.seed)
        self.batch_attacks = AttackUnits(job, plan, counted, self.logits, self.outcome, check, source)
        self.need_checks = need_checks
        governed = self.config.threads is None and self.device.type == "cpu"
        self.threads = ThreadGovernor() if governed else FixedThreads()
        if self.device.type == "cuda":
            self._warm_up()

    def _warm_up(self) -> None:
        """One untimed pass: CUDA loads kernels and creates handles on the first one (~1 s), which
        would otherwise count as the first model's clean time (benchmarks/RESULTS.md, GPU)."""
        x = torch.zeros(2, *self.model.meta.input_size, device=self.device)
        with torch.inference_mode():
            self.target(x if self.plan.protocol.space == "pixel" else self.model.normalize(x))
        torch.cuda.synchronize(self.device)

    def _load(self):
        cfg = self.config
        if self.job.given is not None:  # a module the plan carries: built (and checked) when planned
            return wrap_given(self.job.given, self.device).to(memory_format=self.memory_format)
        torch.manual_seed(cfg.seed)  # --weights random: the same seed builds the same network
        model = load_model(
            self.job.model,
            checkpoint=cfg.checkpoints.get(self.job.model),
            checkpoint_key=cfg.checkpoint_key,
            trust_checkpoint=cfg.trust_checkpoint,
            device=self.device,
            pretrained=cfg.weights != "random",
            **self.job.options,
        )
        return model.to(memory_format=self.memory_format)

    def _target(self) -> nn.Module:
        """What predictions are counted on: the [0,1] model, or the bare network in normalized space
        (a shift may restrict its classes).  Attacks see :meth:`_crafting`."""
        target: nn.Module = self.model if self.plan.protocol.space == "pixel" else self.model.net
        if self.plan.shift is not None:
            target = self.plan.shift.wrap_target(target)
        return target

    def _crafting(self) -> nn.Module:
        """What attacks see: the target, autocast when the run's precision says so."""
        dtype = self.plan.precision.autocast_dtype()
        return self.target if dtype is None else Autocast(self.target, dtype, self.device.type)

    @property
    def meta(self) -> dict[str, Any]:
        meta = asdict(self.model.meta)
        meta["name"] = self.job.name
        return meta

    def pending(self) -> list[int]:
        return [b for b in self.todo if self.todo[b]]

    def run(
        self,
        batches: list[int],
        deliver: Deliver,
        stop_on_error: bool = True,
        progress: Callable[[Unit, float], None] | None = None,
    ) -> BatchOutcome:
        """Evaluate ``batches``; each finished unit goes to ``deliver`` at once, and ``progress`` hears
        how far a long attack has got inside its unit (images' worth).  In a distributed run
        (``stop_on_error=False``) an error is kept in the outcome for the other workers to see."""
        self.batch_attacks.progress = progress
        direct = [b for b in batches if any(a not in self.condition_names for _, a in self.todo[b])]
        loader = self.data.batches(
            self.batch_size, workers=self.plan.workers, pin_memory=self.device.type == "cuda", only=direct
        )
        try:
            for b, idx, x, y in loader:
                self.batch(b, idx, x, y, deliver)
            if self.conditions:
                run_conditions(self.condition_context(), batches, deliver)
        except (ModelFailure, UserError, AttackBoundsError) as exc:
            if stop_on_error:
                raise
            self.outcome.error = (type(exc).__name__, str(exc))
        finally:
            self.threads.restore()
        return self.outcome

    def condition_context(self) -> ConditionContext:
        assert self.plan.shift is not None
        return ConditionContext(
            self.job.name,
            self.plan.shift,
            self.conditions,
            self.data,
            self.batch_size,
            self.config,
            self.plan.workers,
            self.device,
            self.todo,
            self.clean_hits,
            lambda x, what: self.logits(self.inputs(x), what),
            self.threads.look,
            self.outcome,
        )

    def _readable(self, idx, x, y):
        """Drop examples whose image file could not be decoded (or stop, with --strict-data)."""
        readable = y >= 0
        if readable.all():
            return idx, x, y
        names = [self.data.dataset.path_of(int(i)) for i in idx[~readable]]
        if self.config.strict_data:
            raise UserError(f"unreadable image file {names[0]} (--strict-data)")
        self.outcome.skipped.extend(names)
        return idx[readable], x[readable], y[readable]

    def inputs(self, x: torch.Tensor) -> torch.Tensor:
        """Images as the target takes them: on the device, in the memory format, normalized if the
        protocol attacks the normalized tensor."""
        x = x.to(self.device, non_blocking=True)
        if x.dim() == 4:
            x = x.contiguous(memory_format=self.memory_format)
        return x if self.plan.protocol.space == "pixel" else self.model.normalize(x)

    def logits(self, xa: torch.Tensor, what: str) -> torch.Tensor:
        """The target's logits on ``xa`` (no gradients); a :class:`ModelFailure` if any is NaN or inf."""
        with torch.inference_mode(), strict_fp32():
            out = self.target(xa)
        if not torch.isfinite(out).all():
            raise ModelFailure(f"NaN or inf logits on {what}; check the checkpoint")
        return out

    def clean(self, b: int, idx: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> tuple[BatchAttack, float]:
        """The batch's one clean pass (timed; it is counted with the first clean unit) and the model checks."""
        xa, y = self.inputs(x), y.to(self.device, non_blocking=True)
        tick = time.perf_counter()
        clean_logits = self.logits(xa, f"clean images (batch {b})")  # (waits for the GPU: the time below is real)
        seconds = time.perf_counter() - tick
        if self.need_checks:
            with strict_fp32():
                self.outcome.checks = model_checks(self.target, xa[:MODEL_CHECK_EXAMPLES], y[:MODEL_CHECK_EXAMPLES])
            self.need_checks = False
        clean1, clean5 = topk_hits(clean_logits, y)
        self.clean_hits[b] = dict(zip(idx.tolist(), zip(clean1.tolist(), clean5.tolist())))
        base = dict(
            model=self.job.name,
            batch=b,
            example=idx.tolist(),
            label=y.tolist(),
            clean_top1=clean1.tolist(),
            clean_top5=clean5.tolist(),
        )
        return BatchAttack(b, xa, y, clean_logits, base), seconds

    def batch(self, b: int, idx: torch.Tensor, x: torch.Tensor, y: torch.Tensor, deliver: Deliver) -> None:
        """The clean pass and every pending (eps, attack) unit of batch ``b``."""
        idx, x, y = self._readable(idx, x, y)
        if len(y) == 0:
            return
        batch, clean_seconds = self.clean(b, idx, x, y)
        for eps, attack in self.todo[b]:
            if attack in self.condition_names:
                continue  # shifted conditions: run_conditions
            self.threads.look()  # share the cores with other processes between units
            tick = time.perf_counter()
            columns = new_columns()
            curve = self.unit(columns, batch, eps, attack)
            seconds = time.perf_counter() - tick
            if attack == CLEAN:
                seconds, clean_seconds = seconds + clean_seconds, 0.0
            self.outcome.time(f"{self.job.name}|{eps.text}|{attack}", seconds)
            deliver((self.job.name, eps.text, attack, b), seconds, columns, len(y), curve)

    def unit(self, columns: dict[str, list], batch: BatchAttack, eps, attack: str) -> UnitCurve | None:
        """One unit's records (and its attack's convergence curve): the clean row, or an attack (a
        failed attack stops this model)."""
        if attack == CLEAN:
            add_clean_records(columns, batch, eps, CLEAN, forward_passes=1.0)
            return None
        try:
            return self.batch_attacks.records(columns, batch, eps, attack)
        except (ModelFailure, UserError):
            raise
        except Exception as exc:  # a failed attack stops this model; the run goes on with the others
            raise ModelFailure(attack_failure(attack, eps.text, batch.b, exc)) from exc

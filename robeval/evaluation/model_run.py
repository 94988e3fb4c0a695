"""One model of a run, loaded, and its batches each with the one clean pass every unit of it shares.

A unit is (model, eps, attack, batch, member).  :class:`ModelRun` holds what the units of one member
of a model (one of its checkpoints; a model of one checkpoint has one) share: the
network as its predictions are counted (``target``: strict fp32, no gradients) and as its attacks
craft on it (``counted``: autocast under a reduced precision, every pass counted; seen through a
:class:`~robeval.attacks.convergence.CurveWatch` by an attack that draws a convergence curve), its
attacks built once per (eps, attack) with every setting a constructor keyword, their fp32 re-checkers
under a reduced precision, and the units still to do per batch.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..attacks import ATTACKS, create
from ..attacks.base import Attack
from ..attacks.convergence import CurveWatch
from ..attacks.transfer import SourceModel
from ..core.defaults import CLEAN
from ..core.eps import Eps
from ..core.errors import UserError
from ..core.precision import curves_omitted, float32_math
from ..core.records import Columns, Unit
from ..core.seeds import derive_seed
from ..data.examples import EvalData
from .attack_guards import Autocast, ModelFailure, PassCounter, topk_hits
from .compiled import CompiledPasses, compiles
from .plan import Member, ModelJob, RunPlan
from .progress import throttled
from .run_info import RunLog

MODEL_CHECK_EXAMPLES = 16  # randomness / softmax / gradient checks run on this many examples of the first batch
# The fp32 re-check of a reduced precision crafts again on a sample drawn per example from the run's
# seed (the same for every attack, model and batch size): at least this share of the examples and, on
# small runs, about MIN_RECHECKED of them (enough for the pairwise test of the precision flag).
MIN_RECHECK_SHARE, MIN_RECHECKED = 1 / 16, 32


@dataclass
class Batch:
    """What the units of one batch share: the images as attacked, labels, clean logits and the record
    fields every unit repeats (model, batch, example, label, clean hits); the (eps, attack) units to run
    on it, in order; the time of its clean pass (counted with its first clean unit); each minimum-norm
    attack's search (one serves every eps); under ``--cascade`` each eps's records so far."""

    b: int
    xa: torch.Tensor
    y: torch.Tensor
    clean_logits: torch.Tensor
    base: dict[str, Any]
    units: list[tuple[Eps, str]] = field(default_factory=list)
    clean_seconds: float = 0.0
    searches: dict[str, Any] = field(default_factory=dict)
    cascade: dict[str, Columns] = field(default_factory=dict)
    audits: dict[str, Batch] = field(default_factory=dict)  # an audited protocol: per eps, its sample's rows

    @property
    def examples(self) -> list[int]:
        return self.base["example"]

    def rows(self, rows: list[int]) -> Batch:
        """Only the batch's ``rows`` (the examples an attack of the cascade runs on)."""
        idx = torch.tensor(rows, dtype=torch.long, device=self.y.device)
        base = {k: ([v[r] for r in rows] if isinstance(v, list) else v) for k, v in self.base.items()}
        return Batch(self.b, self.xa[idx], self.y[idx], self.clean_logits[idx], base)


class ModelRun:
    """Member ``member`` of model ``job`` of ``plan``, loaded for ``data``: its units still to do (those
    not in ``done``), its attacks (transfer attacks craft on ``source``), and ``log``: what the run
    learns of it.  ``partial`` hears how far a long attack has got inside its unit (its bar's key,
    images' worth); ``checks``: run the model checks (:func:`model_checks`) on its first batch."""

    def __init__(
        self,
        job: ModelJob,
        member: Member,
        plan: RunPlan,
        data: EvalData,
        done: set[Unit],
        log: RunLog,
        source: SourceModel | None = None,
        partial: Callable[[tuple[str, ...], float], None] | None = None,
        checks: bool = False,
    ) -> None:
        self.job, self.member, self.plan, self.config, self.log = job, member, plan, plan.config, log
        self.partial = partial
        self.device, self.batch_size = plan.device, plan.batch_size
        self.memory_format = torch.channels_last if self.config.channels_last else torch.contiguous_format
        self.model = plan.load(job, member).to(memory_format=self.memory_format)
        self.data = data.for_model(self.model.meta)
        self.condition_names = {c.name for c in plan.conditions}
        self.units = plan.units(job)  # evaluated on every batch at every eps: clean, attacks, conditions
        self.todo = {
            b: [(e, a) for e in self.config.eps for a in self.units if self.key(e.text, a, b) not in done]
            for b in range(self.data.num_batches(self.batch_size))
        }
        self.target = self._target()
        dtype = plan.precision.autocast_dtype()  # what attacks see: the target, autocast when the precision says so
        self.counted = PassCounter(self.target if dtype is None else Autocast(self.target, dtype, self.device.type))
        every = [(e, a) for e in self.config.eps for a in job.attacks]
        self.attacks = {(e.text, a): self._attack(a, e, self._crafted_on(a), source) for e, a in every}
        self.checkers = {(e.text, a): self._attack(a, e, self.target) for e, a in every if self._rechecked(a)}
        self.recheck_share = min(1.0, max(MIN_RECHECK_SHARE, MIN_RECHECKED / max(len(self.data.indices), 1)))
        self.clean_hits: dict[int, dict[int, tuple[bool, bool]]] = {}  # batch -> example -> clean top-1/top-5
        self.need_checks = checks  # the model checks, on its first batch
        # one untimed pass on CUDA, which loads kernels and creates handles on the first one (~1 s): else that
        # would count as the first model's clean time (benchmarks/RESULTS.md, GPU)
        if self.device.type == "cuda":
            with torch.inference_mode():
                self.target(self.inputs(torch.zeros(2, *self.model.meta.input_size)))
            torch.cuda.synchronize(self.device)

    def key(self, eps: str, attack: str, b: int) -> Unit:
        """The unit of this member at ``eps`` under ``attack`` (or condition) on batch ``b``."""
        return (self.job.name, eps, attack, b, self.member.index)

    def _target(self) -> nn.Module:
        """What predictions are counted on: the [0,1] model, or the bare network in normalized space
        (a shift may restrict its classes); its passes compiled where ``--compile`` says (the attacks'
        and the fp32 re-check's alike: robeval.evaluation.compiled)."""
        target: nn.Module = self.model if self.plan.protocol.space == "pixel" else self.model.net
        if self.plan.shift is not None:
            target = self.plan.shift.wrap_target(target)
        return CompiledPasses(target, self.batch_size) if compiles(self.config.compile, self.device) else target

    def _crafted_on(self, attack: str) -> nn.Module:
        """The counted model, watched when ``attack`` draws a convergence curve."""
        cls: type[Attack] = ATTACKS.require(attack).cls
        if cls.curve_axis is not None and curves_omitted(self.plan.precision) is None:
            return CurveWatch.for_attack(self.counted, cls, self.config.settings[attack])
        return self.counted

    def _rechecked(self, attack: str) -> bool:
        """Under a reduced precision, a fixed-eps white-box attack runs again on the target as counted
        (strict fp32, its passes uncounted): the fp32 re-check."""
        spec = ATTACKS.require(attack)
        return self.plan.precision.reduced and spec.kind == "white-box" and not spec.minimum_norm

    def _attack(self, attack: str, eps: Eps, model: nn.Module, source: SourceModel | None = None):
        """The attack of one (eps, attack) unit on ``model``, every setting a constructor keyword."""
        clip, settings = self.plan.protocol.box(attack), self.config.settings[attack]
        norm, seed = self.config.norm, self.config.seed
        return create(attack, model, eps.value, norm=norm, seed=seed, clip=clip, source=source, **settings)

    @property
    def meta(self) -> dict[str, Any]:
        return {**self.model.meta.record(), "name": self.job.name}

    def labels(self, batch: Batch, attack: str) -> torch.Tensor:
        """The labels ``attack`` is given: the true ones, or the clean predictions (the protocol says)."""
        return batch.clean_logits.argmax(1) if self.plan.protocol.label_source(attack) == "predicted" else batch.y

    def seeding(self, batch: Batch, eps: Eps, attack: str) -> tuple[int, list[int] | None]:
        """The seed and example indices of an attack call: per unit and per example, or AutoAttack's own
        seeding where the attack draws as AutoAttack's code does (:meth:`~.plan.RunPlan.library_draws`)."""
        if self.plan.library_draws(attack):
            return self.config.seed, None
        return derive_seed(self.config.seed, attack, eps.text, batch.b), batch.examples

    @contextmanager
    def progress(self, unit: Unit, attacker, n: int) -> Iterator[None]:
        """Report progress inside an attack's unit (its bar: model, eps, attack): passes spent against its budget."""
        budget = attacker.budget()
        if self.partial is not None and budget:
            report = self.partial
            self.counted.listener = throttled(lambda passes: report(unit[:3], n * min(1.0, passes / (budget * n))))
        try:
            yield
        finally:
            self.counted.listener = None

    def batches(self, share: list[int]) -> Iterator[Batch]:
        """The batches of ``share`` with units other than shifted conditions, each after its clean pass."""
        direct = [b for b in share if any(a not in self.condition_names for _, a in self.todo[b])]
        pin = self.device.type == "cuda"
        for b, idx, x, y in self.data.batches(self.batch_size, workers=self.plan.workers, pin_memory=pin, only=direct):
            idx, x, y = self._readable(idx, x, y)
            if len(y):
                yield self.clean(b, idx, x, y)

    def _readable(self, idx, x, y):
        """Drop examples whose image file could not be decoded (or stop, with --strict-data)."""
        readable = y >= 0
        if readable.all():
            return idx, x, y
        names = [self.data.dataset.path_of(int(i)) for i in idx[~readable]]
        if self.config.strict_data:
            raise UserError(f"unreadable image file {names[0]} (--strict-data)")
        self.log.skipped.update(names)
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
        with torch.inference_mode(), float32_math():
            out = self.target(xa)
        if not torch.isfinite(out).all():
            raise ModelFailure(f"NaN or inf logits on {what}; check the checkpoint")
        return out

    def clean(self, b: int, idx: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> Batch:
        """The batch's one clean pass (timed), the model checks on the model's first batch, its units."""
        xa, y = self.inputs(x), y.to(self.device, non_blocking=True)
        tick = time.perf_counter()
        clean_logits = self.logits(xa, f"clean images (batch {b})")  # (waits for the GPU: the time below is real)
        seconds = time.perf_counter() - tick
        if self.need_checks:
            with float32_math():
                checks = model_checks(self.target, xa[:MODEL_CHECK_EXAMPLES], y[:MODEL_CHECK_EXAMPLES])
            self.log.model_checks[self.job.name], self.need_checks = checks, False
        base = self.shared_fields(b, idx.tolist(), y.tolist(), self.keep_clean_hits(b, idx, clean_logits, y))
        return Batch(b, xa, y, clean_logits, base, self.batch_units(b), seconds)

    def keep_clean_hits(self, b: int, idx: torch.Tensor, logits: torch.Tensor, y: torch.Tensor) -> tuple[list, list]:
        """Batch ``b``'s clean top-1 and top-5 hits, kept by example (a shift's conditions repeat them)."""
        hits = tuple(h.tolist() for h in topk_hits(logits, y))
        self.clean_hits[b] = dict(zip(idx.tolist(), zip(*hits)))
        return hits[0], hits[1]

    def shared_fields(self, b: int, examples: list[int], labels: list[int], clean: tuple) -> dict[str, Any]:
        """The record fields every unit of batch ``b`` repeats: model, member, batch, example, label, clean hits."""
        return dict(
            model=self.job.name,
            member=self.member.index,
            batch=b,
            example=examples,
            label=labels,
            clean_top1=clean[0],
            clean_top5=clean[1],
        )

    def batch_units(self, b: int) -> list[tuple[Eps, str]]:
        """The (eps, attack) units batch ``b`` runs, in order: its pending ones; in a chain (``--cascade``,
        an audited protocol's pass and audit) with the earlier units they follow (recomputed when a resumed
        run stored them)."""
        pending = [(e, a) for e, a in self.todo[b] if a not in self.condition_names]
        order = self.plan.chain(self.job)
        if order is None:
            return pending
        units = []
        for eps in self.config.eps:
            wanted = [a for e, a in pending if e.text == eps.text]
            last = max((order.index(a) for a in wanted if a in order), default=-1)
            units += [(eps, a) for a in ([CLEAN] if CLEAN in wanted else []) + order[: last + 1]]
        return units


# Checks of a model itself, made on the first batch of its run (they need the model): randomness across
# passes, outputs that look like probabilities, input gradients that are zero or NaN.  Their values are
# stored with the run; robeval.results.indicators judges them.
def model_checks(net: nn.Module, x: torch.Tensor, y: torch.Tensor) -> dict[str, Any]:
    """Randomness, probability-like outputs and input-gradient health on one batch."""
    with torch.no_grad():
        first, second = net(x), net(x)
    scale = float(first.abs().max().clamp_min(1e-12))
    random_diff = float((first - second).abs().max()) / scale
    rows_sum = first.sum(dim=1)
    probabilities = bool(
        ((first >= 0) & (first <= 1)).all() and torch.allclose(rows_sum, torch.ones_like(rows_sum), atol=1e-3)
    )
    log_probabilities = bool(
        (first <= 1e-6).all() and torch.allclose(first.logsumexp(1), torch.zeros_like(rows_sum), atol=1e-3)
    )
    xg = x.clone().requires_grad_(True)
    with torch.enable_grad():
        loss = F.cross_entropy(net(xg), y, reduction="sum")
        (grad,) = torch.autograd.grad(loss, xg)
    flat = grad.flatten(1)
    broken = (~torch.isfinite(flat).all(1)) | (flat.abs().amax(1) == 0)
    return {
        "relative_logit_change_between_passes": random_diff,
        "outputs_are_probabilities": probabilities,
        "outputs_are_log_probabilities": log_probabilities,
        "share_zero_or_nan_gradients": float(broken.float().mean()),
        "examples_checked": int(len(y)),
    }

"""One model's share of a run: load it, attack every pending batch, hand each finished unit on.

A unit is (model, eps, attack, batch).  For each batch the clean pass runs once (under inference
mode) and is shared by every eps and attack; each attack's batch is verified against the threat
model before it is counted.  ``ModelEvaluation`` holds what the steps share, so each step is one
short method.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

from ..attacks import create
from ..attacks.minimum_norm import MinimumNormAttack, fooled_within, minimal_norms
from ..attacks.transfer import TransferAttack, source_model
from ..errors import UserError
from ..models import load_model
from ..threads import FixedThreads, ThreadGovernor
from .attack_calls import AttackBoundsError, Autocast, PassCounter, attack_with_halving, derive_seed, verify_adversarial
from .checks import model_checks
from .config import AMP_DTYPES, EvalConfig, ModelJob, job_units
from .data import EvalData
from ..defaults import RECORD_DEFAULTS
from .metrics import RECORD_COLUMNS, perturbation_norms, topk_hits
from .progress import throttled
from .shift_run import run_conditions
from ..shifts.catalog import get_shift
from ..shifts.datasets import RestrictedLogits, config_conditions

MODEL_CHECK_EXAMPLES = 16  # randomness / softmax / gradient checks run on this many examples of the first batch

Unit = tuple[str, str, str, int]  # (model, eps, attack, batch)
Deliver = Callable[[Unit, float, dict[str, list], int], None]


class ModelFailure(Exception):
    """A model that cannot be evaluated (NaN/inf logits, a failed attack): it stops, the other models go on."""


def attack_failure(attack: str, eps: str, batch: int, exc: Exception) -> str:
    """One line for an attack that raised: what, where in the run, and where in the code."""
    text = (str(exc).strip().splitlines() or [""])[0][:200]
    if isinstance(exc, AttackBoundsError):
        return f"{text} (eps {eps}, batch {batch})"
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"attack {attack} failed at eps {eps}, batch {batch}: {type(exc).__name__}: {text}{where}"


def new_columns() -> dict[str, list]:
    return {c: [] for c in RECORD_COLUMNS}


def add_records(columns: dict[str, list], **values: Any) -> None:
    """Append one batch of records; scalars are repeated for every example."""
    n = len(values["example"])
    for column in RECORD_COLUMNS:
        value = values[column] if column in values else RECORD_DEFAULTS[column]
        columns[column].extend(value if isinstance(value, list) else [value] * n)


@dataclass
class BatchOutcome:
    """What one worker learns while evaluating a model, shared with rank 0 in distributed runs."""

    skipped: list[str] = field(default_factory=list)
    checks: dict[str, Any] | None = None
    timings: dict[str, float] = field(default_factory=dict)
    oom_splits: int = 0
    error: tuple[str, str] | None = None

    def time(self, key: str, seconds: float) -> None:
        self.timings[key] = self.timings.get(key, 0.0) + seconds


class ModelEvaluation:
    """Evaluate ``job`` on ``data``: the loaded model, its attacks and the units still to do."""

    def __init__(self, job: ModelJob, config: EvalConfig, protocol, data: EvalData, done: set[Unit],
                 need_checks: bool) -> None:
        self.job, self.config, self.protocol = job, config, protocol
        self.device = config.resolved_device()
        self.batch_size = config.resolved_batch_size()
        self.model = self._load()
        self.data = data.for_model(self.model.meta)
        self.conditions = config_conditions(config)  # shifted (corruption, severity) conditions, if any
        self.condition_names = {c.name for c in self.conditions}
        self.units = job_units(job, config)
        self.clean_hits: dict[int, dict[int, tuple[bool, bool]]] = {}  # batch -> example -> clean top-1/top-5 hit
        self.todo = {b: [(e, a) for e in config.eps for a in self.units if (job.name, e.text, a, b) not in done]
                     for b in range(self.data.num_batches(self.batch_size))}
        self.target = self._target()
        self.counted = PassCounter(self.target)
        self.attacks = {(e.text, a): create(a, self.counted, e.value, norm=config.norm, seed=config.seed,
                                            clip=protocol.box(a), **config.attack_settings(a))
                        for e in config.eps for a in job.attacks}
        if config.source_model:  # transfer attacks craft on the run's source model (loaded once per run)
            source = source_model(config.source_model, self.device, config.trust_checkpoint,
                                  pretrained=config.weights != "random", seed=config.seed)
            for attack in self.attacks.values():
                if isinstance(attack, TransferAttack):
                    attack.source = source
        self.found: dict[tuple[int, str], MinimumNormFound] = {}  # minimum-norm searches of the current batch
        self.outcome = BatchOutcome()
        self.progress: Callable[[Unit, float], None] | None = None
        self.need_checks = need_checks
        governed = config.threads is None and self.device.type == "cpu"
        self.threads = ThreadGovernor() if governed else FixedThreads()
        if self.device.type == "cuda":
            self._warm_up()

    def _warm_up(self) -> None:
        """One untimed pass: CUDA loads kernels and creates handles on the first one (~1 s), which
        would otherwise count as the first model's clean time (benchmarks/RESULTS.md, GPU)."""
        x = torch.zeros(2, *self.model.meta.input_size, device=self.device)
        with torch.inference_mode():
            self.target(x if self.protocol.space == "pixel" else self.model.normalize(x))
        torch.cuda.synchronize(self.device)

    def _load(self):
        cfg = self.config
        torch.manual_seed(cfg.seed)  # --weights random: the same seed builds the same network
        model = load_model(self.job.model, checkpoint=cfg.checkpoints.get(self.job.model), checkpoint_key=cfg.checkpoint_key,
                           trust_checkpoint=cfg.trust_checkpoint, device=self.device,
                           pretrained=cfg.weights != "random", **self.job.options)
        if cfg.channels_last:
            model = model.to(memory_format=torch.channels_last)
        return model

    def _target(self) -> nn.Module:
        """What attacks see: the [0,1] model, or the bare network in normalized space; autocast on top."""
        target: nn.Module = self.model if self.protocol.space == "pixel" else self.model.net
        if self.config.shift is not None and get_shift(self.config.shift).classes:
            target = RestrictedLogits(target, get_shift(self.config.shift).classes)
        if self.config.amp != "off":
            target = Autocast(target, AMP_DTYPES[self.config.amp], self.device.type)
        return target

    @property
    def meta(self) -> dict[str, Any]:
        meta = asdict(self.model.meta)
        meta["name"] = self.job.name
        return meta

    def pending(self) -> list[int]:
        return [b for b in self.todo if self.todo[b]]

    def finished_images(self, eps: str, attack: str, done: set[Unit]) -> int:
        return sum(len(self.data.batch_indices(self.batch_size, b)) for b in self.todo
                   if (self.job.name, eps, attack, b) in done)

    def run(self, batches: list[int], deliver: Deliver, stop_on_error: bool = True,
            progress: Callable[[Unit, float], None] | None = None) -> BatchOutcome:
        """Evaluate ``batches``; each finished unit goes to ``deliver`` at once, and ``progress`` hears
        how far a long attack has got inside its unit (images' worth).  In a distributed run
        (``stop_on_error=False``) an error is kept in the outcome for the other workers to see."""
        self.progress = progress
        direct = [b for b in batches if any(a not in self.condition_names for _, a in self.todo[b])]
        loader = self.data.batches(self.batch_size, workers=self.config.workers,
                                   pin_memory=self.device.type == "cuda", only=direct)
        try:
            for b, idx, x, y in loader:
                self.batch(b, idx, x, y, deliver)
            if self.conditions:
                run_conditions(self, batches, deliver)
        except (ModelFailure, UserError, AttackBoundsError) as exc:
            if stop_on_error:
                raise
            self.outcome.error = (type(exc).__name__, str(exc))
        finally:
            self.threads.restore()
        return self.outcome

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
        if self.config.channels_last and x.dim() == 4:
            x = x.contiguous(memory_format=torch.channels_last)
        return x if self.protocol.space == "pixel" else self.model.normalize(x)

    def logits(self, xa: torch.Tensor, what: str) -> torch.Tensor:
        """The target's logits on ``xa`` (no gradients); a :class:`ModelFailure` if any is NaN or inf."""
        with torch.inference_mode():
            out = self.target(xa)
        if not torch.isfinite(out).all():
            raise ModelFailure(f"NaN or inf logits on {what}; check the checkpoint")
        return out

    def batch(self, b: int, idx: torch.Tensor, x: torch.Tensor, y: torch.Tensor, deliver: Deliver) -> None:
        """The clean pass and every pending (eps, attack) unit of batch ``b``."""
        idx, x, y = self._readable(idx, x, y)
        if len(y) == 0:
            return
        xa, y = self.inputs(x), y.to(self.device, non_blocking=True)
        tick = time.perf_counter()
        clean_logits = self.logits(xa, f"clean images (batch {b})")  # (waits for the GPU: the time below is real)
        clean_seconds = time.perf_counter() - tick  # the shared clean pass: timed with the clean unit
        if self.need_checks:
            self.outcome.checks = model_checks(self.target, xa[:MODEL_CHECK_EXAMPLES], y[:MODEL_CHECK_EXAMPLES])
            self.need_checks = False
        clean1, clean5 = topk_hits(clean_logits, y)
        self.clean_hits[b] = dict(zip(idx.tolist(), zip(clean1.tolist(), clean5.tolist())))
        base = dict(model=self.job.name, batch=b, example=idx.tolist(), label=y.tolist(), clean_top1=clean1.tolist(),
                    clean_top5=clean5.tolist())
        for eps, attack in self.todo[b]:
            if attack in self.condition_names:
                continue  # shifted conditions: run_conditions
            self.threads.look()  # share the cores with other processes between units
            tick = time.perf_counter()
            columns = new_columns()
            if attack == "clean":
                add_records(columns, **base, attack="clean", eps=eps.text, eps_value=eps.value, adv_top1=clean1.tolist(),
                            adv_top5=clean5.tolist(), adv_pred=clean_logits.argmax(1).tolist(), linf=0.0, l2=0.0,
                            forward_passes=1.0, backward_passes=0.0)
            else:
                try:
                    self._attack_unit(columns, base, b, xa, y, clean_logits, eps, attack)
                except (ModelFailure, UserError):
                    raise
                except Exception as exc:  # a failed attack stops this model; the run goes on with the others
                    raise ModelFailure(attack_failure(attack, eps.text, b, exc)) from exc
            seconds = time.perf_counter() - tick
            if attack == "clean":
                seconds, clean_seconds = seconds + clean_seconds, 0.0
            self.outcome.time(f"{self.job.name}|{eps.text}|{attack}", seconds)
            deliver((self.job.name, eps.text, attack, b), seconds, columns, len(y))

    def _attack_unit(self, columns, base, b, xa, y, clean_logits, eps, attack) -> None:
        labels = clean_logits.argmax(1) if self.protocol.label_source(attack) == "predicted" else y
        attacker = self.attacks[(eps.text, attack)]
        if isinstance(attacker, MinimumNormAttack):  # read from the batch's one search: no pass of its own
            found = self._minimum_norm(b, attack, attacker, xa, labels, clean_logits, base["example"])
            kept = fooled_within(found.norms, eps.value)
            x_adv = torch.where(kept.view(-1, *[1] * (xa.dim() - 1)), found.points, xa)
            adv_logits = torch.where(kept[:, None], found.logits, clean_logits)
            (fwd, bwd), min_norm = found.passes, found.norms.tolist()
        else:
            self.counted.reset()
            seed = derive_seed(self.config.seed, attack, eps.text, b)
            self._listen((self.job.name, eps.text, attack, b), attacker, len(y))
            try:
                x_adv = attack_with_halving(attacker, xa, labels, seed, self.outcome, base["example"])
            finally:
                self.counted.listener = None
            fwd, bwd, min_norm = self.counted.forward_images / len(y), self.counted.backward_images / len(y), float("nan")
            adv_logits = None
        verify_adversarial(attack, x_adv, xa, eps.value, self.config.norm, self.protocol.box(attack))
        if adv_logits is None:
            adv_logits = self.logits(x_adv, f"{attack} images (batch {b})")
        adv1, adv5 = topk_hits(adv_logits, y)
        linf, l2 = perturbation_norms(x_adv, xa)
        add_records(columns, **base, attack=attack, eps=eps.text, eps_value=eps.value, adv_top1=adv1.tolist(),
                    adv_top5=adv5.tolist(), adv_pred=adv_logits.argmax(1).tolist(), linf=linf.tolist(),
                    l2=l2.tolist(), forward_passes=fwd + 1.0, backward_passes=bwd, min_norm=min_norm)

    def _listen(self, unit: Unit, attacker, n: int) -> None:
        """Report progress inside the unit: forward passes spent against the attack's budget."""
        budget = attacker.budget()
        if self.progress is None or not budget:
            return
        report = self.progress
        self.counted.listener = throttled(lambda passes: report(unit, n * min(1.0, passes / (budget * n))))

    def _minimum_norm(self, b, attack, attacker, xa, labels, clean_logits, examples) -> "MinimumNormFound":
        """A minimum-norm attack's search on batch ``b``: run once (seeded without eps) and evaluated
        once, kept while the batch's other eps read it; its passes are reported under every eps it serves."""
        if (b, attack) not in self.found:
            self.found = {key: v for key, v in self.found.items() if key[0] == b}  # only this batch's searches
            self.counted.reset()
            seed = derive_seed(self.config.seed, attack, b)
            points = attack_with_halving(attacker.find_points, xa, labels, seed, self.outcome, examples)
            passes = (self.counted.forward_images / len(labels), self.counted.backward_images / len(labels))
            logits = self.logits(points, f"{attack} images (batch {b})")
            norms = minimal_norms(xa, points, clean_logits.argmax(1), logits.argmax(1), labels, self.config.norm)
            self.found[(b, attack)] = MinimumNormFound(points, logits, norms, passes)
        return self.found[(b, attack)]


@dataclass
class MinimumNormFound:
    points: torch.Tensor  # the smallest fooling point per example (clean image where none was found)
    logits: torch.Tensor  # the target's logits on them (at each eps a row takes these or the clean ones)
    norms: torch.Tensor  # its size (0: misclassified clean, inf: none found)
    passes: tuple[float, float]  # forward / backward passes per example of the search

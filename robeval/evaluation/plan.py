"""What a run will do, resolved once from its judged configuration (docs/layout.md): every part of the
engine reads the plan instead of resolving these again.  Its identity is its configuration's
(:meth:`EvalConfig.to_identity`).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

import torch

from ..attacks import ATTACKS
from ..core.defaults import CLEAN
from ..core.errors import UserError
from ..core.precision import Precision, get_precision
from ..core.records import audit_unit, model_key
from ..data.published import IN_MEMORY
from ..models import GivenModel, NormalizedModel, get_spec, load_model, split_models
from ..models.checkpoint import OpenedCheckpoint, open_checkpoint
from ..models.given import given_from_spec
from ..models.provenance import model_code
from ..options import EvalConfig
from ..shifts.catalog import Condition
from ..shifts.kinds import SHIFT_KINDS, ShiftKind
from .config import make_config
from .protocols import PROTOCOLS, Protocol

# Default batch sizes.  For 224x224 images on a CPU, batches of 8-32 attack at least as fast as 64
# (benchmarks/batch_size.py: deit-tiny, 2 threads, 1.08-1.16x the img/s of batch 64) while autograd
# keeps ~19 MB of activations per image; on a GPU larger batches pay off.
DIGITS_BATCH = 128  # in-memory data sets (digits, CIFAR, MNIST): small images
FOLDER_BATCH = {False: 16, True: 64}  # keyed by "runs on CUDA"


@dataclass(frozen=True)
class Member:
    """One checkpoint of a model (one training seed of its procedure): its index among the model's
    members, the weights file it loads (None: the model's default weights; the file as read once:
    :meth:`RunPlan.opened`), or the module the plan carries for it (given from Python, or built from the
    user's code when the run was planned)."""

    index: int = 0
    checkpoint: str | None = None
    given: GivenModel | None = None


@dataclass
class ModelJob:
    """One column of results: a registered model with options and the attacks it faces, or a model the
    plan carries as modules; ``members``: its checkpoints, each evaluated on the same examples with the
    same attack seeds (one member: a model as runs have always had)."""

    name: str
    model: str
    options: dict[str, Any]
    attacks: list[str]
    members: list[Member]

    @property
    def given(self) -> GivenModel | None:
        """The first member's module, when the plan carries the model as modules (else None)."""
        return self.members[0].given


@dataclass
class RunPlan:
    config: EvalConfig  # its batch size resolved
    protocol: Protocol
    device: torch.device
    workers: int  # DataLoader worker processes
    jobs: list[ModelJob]
    shift: ShiftKind | None
    conditions: list[Condition]
    source: ModelJob | None  # --source-model: the model transfer attacks craft on (:func:`source_job`)
    # checkpoint path -> the file as one read gave it (:meth:`opened`): read at admission (the preflight) or
    # by the user's code's load when the run was planned, and taken from here by the model's load and the
    # SHA-256 the run records
    checkpoints: dict[str, OpenedCheckpoint] = field(default_factory=dict, repr=False)
    loads: Counter[str] = field(default_factory=Counter, repr=False)  # checkpoint path -> the loads of it made

    def units(self, job: ModelJob) -> list[str]:
        """What one model's run evaluates on every batch at every eps: the clean images (unless the
        data has none: an ImageNet-C tree), its attacks, then the shifted conditions."""
        clean = [CLEAN] if self.shift is None or self.shift.has_clean_images else []
        audit = [audit_unit(stage) for stage in self.protocol.audit_stages]
        return [*clean, *job.attacks, *audit, *(c.name for c in self.conditions)]

    def chain(self, job: ModelJob) -> list[str] | None:
        """The units a batch runs one after another, each on the examples those before it left robust
        (None: each on every example): ``--cascade``'s attacks; under an audited protocol its pass, then
        its audit units (the audit's own units come in a second pass: robeval.evaluation.fast.steps)."""
        stages = self.protocol.audit_stages
        if stages:
            return [a for a in job.attacks if a not in stages] + [audit_unit(stage) for stage in stages]
        return list(job.attacks) if self.config.cascade else None

    def library_draws(self, attack: str) -> bool:
        """Whether ``attack`` draws as AutoAttack's own code does (robeval.evaluation.units): an attack from
        that code, under ``--cascade`` or where the protocol names it (an audited protocol's FAB-T and Square)."""
        from_library = getattr(ATTACKS.require(attack).cls, "library_draws", False)
        return from_library and (self.config.cascade or attack in self.protocol.library_draws)

    @property
    def batch_size(self) -> int:
        assert self.config.batch_size is not None, "a plan's configuration has its batch size"
        return self.config.batch_size

    @property
    def precision(self) -> Precision:
        """How the attacks craft (counted predictions are strict fp32 whatever it is)."""
        return get_precision(self.config.precision)

    def load(self, job: ModelJob, member: Member) -> NormalizedModel:
        """Member ``member`` of ``job`` as the run loads it: the module the plan carries (built and checked
        when planned), or model ``job.model`` built (``--weights random``: the run's seed builds the same
        network) with the weights of its checkpoint as the run read them once (:meth:`opened`): the bytes it
        hashed, their tensors dropped after the run's last load of them (every member and the transfer source
        that load the file counted)."""
        if member.given is not None:
            return member.given.wrapped(self.device)
        config = self.config
        torch.manual_seed(config.seed)
        opened = self.opened(member.checkpoint) if member.checkpoint is not None else None
        pretrained = config.weights != "random"
        model = load_model(job.model, opened, device=self.device, pretrained=pretrained, **job.options)
        if member.checkpoint is not None and opened is not None:
            self.loads[member.checkpoint] += 1
            jobs = [*self.jobs, *([self.source] if self.source else [])]
            planned = [m.checkpoint for j in jobs for m in j.members if m.given is None]
            if self.loads[member.checkpoint] >= planned.count(member.checkpoint):
                opened.release()
        return model

    def identity(self) -> dict[str, Any]:
        """What determines the records (:meth:`EvalConfig.to_identity`), and of every module the plan
        carries its source, weights' SHA-256 and image facts (a list, one per member, for several)."""
        identity = self.config.to_identity()
        carried = [job for job in self.jobs if job.given is not None]
        members = {job.name: [m.given.identity() for m in job.members if m.given is not None] for job in carried}
        given = {name: each[0] if len(each) == 1 else each for name, each in members.items()}
        return {**identity, "given_models": given} if given else identity

    def models_code(self) -> dict[str, dict[str, str]]:
        """The code of every model that is not robeval's own (robeval.models.provenance): the file a
        model of the user's code was read from, a plugin's distribution, version and layer file."""
        found = {
            job.name: job.given.meta.code if job.given is not None else model_code(get_spec(job.model))
            for job in self.jobs
        }
        return {name: code for name, code in found.items() if code}

    def opened(self, path: str) -> OpenedCheckpoint:
        """Checkpoint ``path`` read once per plan (robeval.models.checkpoint.open_checkpoint, with the run's
        ``--checkpoint-key`` and ``--trust-checkpoint``): admitted, loaded and recorded from that one read."""
        if path not in self.checkpoints:
            config = self.config
            self.checkpoints[path] = open_checkpoint(path, config.checkpoint_key, config.trust_checkpoint)
        return self.checkpoints[path]

    def loaded_checkpoints(self) -> dict[str, dict[str, str]]:
        """Every checkpoint file the run loads, with its SHA-256, by what loads it: ``MODEL`` (``MODEL member
        K`` of a model of several) and ``--source-model NAME``; a resume compares them
        (robeval.models.provenance.checkpoint_change)."""
        loaders = {
            name if len(paths) == 1 else f"{name} member {k + 1}": path
            for name, paths in self.config.checkpoints.items()
            for k, path in enumerate(paths)
        }
        checkpoint = self.source.members[0].checkpoint if self.source is not None else None
        if self.source is not None and checkpoint is not None:
            loaders[f"--source-model {self.source.name}"] = checkpoint
        return {who: {"path": path, "sha256": self.opened(path).sha256} for who, path in loaders.items()}

    def outline(self, batches: int) -> dict[str, Any]:
        """What the run sets out to do, stored at once: every model's units, on ``batches`` batches each
        (and of every member: ``members`` counts a model's checkpoints where it has several)."""
        several = {job.name: len(job.members) for job in self.jobs if len(job.members) > 1}
        outline = {"batches": batches, "units": {job.name: self.units(job) for job in self.jobs}}
        return {**outline, "members": several} if several else outline


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise UserError(f"invalid --device {device!r}: use auto, cpu, cuda or cuda:N") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise UserError("--device cuda requested but no CUDA GPU is available")
    return dev


def _loading(config: EvalConfig, device: torch.device, shift: ShiftKind | None) -> tuple[int, int]:
    """The batch size and DataLoader processes, as given or by the data: arrays in memory (digits, CIFAR,
    MNIST, CIFAR-10-C, CIFAR-10.1) need no worker processes; image folders decode JPEGs in them."""
    in_memory = config.data in IN_MEMORY or (shift is not None and shift.in_memory)
    batch_size = config.batch_size or (DIGITS_BATCH if in_memory else FOLDER_BATCH[device.type == "cuda"])
    workers = (0 if in_memory else min(8, os.cpu_count() or 1)) if config.workers is None else config.workers
    return batch_size, workers


def model_job(config: EvalConfig, protocol: Protocol, name: str, given: Mapping[str, list[GivenModel]]) -> ModelJob:
    """One model's job: modules given from Python, the user's code built now (once per checkpoint), or
    a registered model with the protocol's model options where it has them; a member per checkpoint."""
    attacks = list(config.attacks)
    if name in given:
        return ModelJob(name, name, {}, attacks, [Member(i, None, m) for i, m in enumerate(given[name])])
    spec = get_spec(config.references.get(name, name))
    paths: list[str | None] = list(config.checkpoints.get(name, [])) or [None]
    if spec.reference is not None:
        built = [given_from_spec(name, spec, config.seed, config, path) for path in paths]
        return ModelJob(name, spec.name, {}, attacks, [Member(i, p, b) for i, (p, b) in enumerate(zip(paths, built))])
    options = {k: v for k, v in protocol.model_options.items() if k in spec.options}
    return ModelJob(name, name, options, attacks, [Member(i, path) for i, path in enumerate(paths)])


def model_jobs(config: EvalConfig, protocol: Protocol, given: Mapping[str, list[GivenModel]] | None) -> list[ModelJob]:
    """The models to evaluate (see :func:`model_job`); with ``adaptive``, every model whose spec is
    adaptive again with its adaptive options under the white-box attacks (named ``<model>+adaptive``),
    with the same members; an audited protocol runs whole (its audit ends with a black-box attack)."""
    jobs = [model_job(config, protocol, m, given or {}) for m in config.models]
    white = [a for a in config.attacks if ATTACKS.require(a).kind == "white-box" or protocol.audit_stages]
    for job in [j for j in jobs if config.adaptive and white and j.given is None and get_spec(j.model).is_adaptive]:
        options = {**job.options, **(get_spec(job.model).adaptive or {})}
        jobs.append(ModelJob(model_key(job.name, adaptive=True), job.model, options, white, job.members))
    return jobs


def make_plan(config: EvalConfig, given: Mapping[str, list[GivenModel]] | None = None) -> RunPlan:
    """The run's plan: one line for anything that cannot run here (the device, the precision on it,
    the models' code and names).  ``given``: the modules given from Python (each model's members), by
    the names ``config.models`` has for them."""
    protocol = PROTOCOLS.require(config.protocol)
    device = resolve_device(config.device)
    get_precision(config.precision, on_gpu=device.type == "cuda")
    shift = SHIFT_KINDS.require(config.shift) if config.shift is not None else None
    batch_size, workers = _loading(config, device, shift)
    config = replace(config, batch_size=batch_size)
    conditions = shift.conditions(config.corruptions, config.severities) if shift is not None else []
    source = source_job(config)
    jobs = model_jobs(config, protocol, given)
    built = [m.given for j in [*jobs, *([source] if source else [])] for m in j.members if m.given]
    read = {g.checkpoint.path: g.checkpoint for g in built if g.checkpoint}
    return RunPlan(config, protocol, device, workers, jobs, shift, conditions, source, read)


def source_job(config: EvalConfig) -> ModelJob | None:
    """``--source-model NAME[=CHECKPOINT]`` (:attr:`EvalConfig.source`) as a job of one member and no attacks
    of its own; the user's code built now, once, as a model's is (:func:`model_job`)."""
    if config.source is None:
        return None
    name, checkpoint = config.source
    spec = get_spec(name)
    given = given_from_spec(name, spec, config.seed, config, checkpoint) if spec.reference is not None else None
    return ModelJob(name, name, {}, [], [Member(0, checkpoint, given)])


def planned_identity(options: Mapping[str, Any]) -> dict[str, Any]:
    """The identity a run of ``options`` would store (its run options; others, such as ``out`` or
    ``store``, are passed over; modules in ``models`` count by their name, source and weights)."""
    names = {f.name for f in fields(EvalConfig)}
    plain = {k: v for k, v in options.items() if k in names}
    plain["models"], given = split_models(plain.get("models"))
    return make_plan(make_config(**plain), given).identity()

"""What a run will do, resolved once from its configuration: the protocol, the device and batch size,
every attack's settings, the model jobs (with ``--adaptive`` copies), the shift and its conditions.
Every part of the engine reads the plan instead of resolving these again.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch

from ..attacks import get_attack_spec
from ..data.loading import is_in_memory
from ..defaults import CLEAN
from ..errors import UserError
from ..models import GivenModel, get_spec
from ..models.given import given_from_spec
from ..options import EvalConfig
from ..precision import Precision, get_precision
from ..shifts.catalog import Condition
from ..shifts.kinds import SHIFT_KINDS, ShiftKind, get_shift
from .config import ADAPTIVE_SUFFIX, attack_settings, semantic_config
from .protocols import Protocol, get_protocol

# Default batch sizes.  For 224x224 images on a CPU, batches of 8-32 attack at least as fast as 64
# (benchmarks/batch_size.py: deit-tiny, 2 threads, 1.08-1.16x the img/s of batch 64) while autograd
# keeps ~19 MB of activations per image; on a GPU larger batches pay off.
DIGITS_BATCH = 128  # in-memory data sets (digits, CIFAR, MNIST): small images
FOLDER_BATCH = {False: 16, True: 64}  # keyed by "runs on CUDA"


@dataclass
class ModelJob:
    """One column of results: a registered model with options and the attacks it faces, or a module
    the plan carries (given from Python, or built from the user's code when the run was planned)."""

    name: str
    model: str
    options: dict[str, Any]
    attacks: list[str]
    given: GivenModel | None = None


@dataclass
class RunPlan:
    config: EvalConfig
    protocol: Protocol
    device: torch.device
    batch_size: int
    settings: dict[str, dict[str, Any]]  # attack -> the settings it runs with (protocol defaults, --set)
    workers: int  # DataLoader worker processes
    jobs: list[ModelJob]
    shift: ShiftKind | None
    conditions: list[Condition]

    def units(self, job: ModelJob) -> list[str]:
        """What one model's run evaluates on every batch at every eps: the clean images (unless the
        data has none: an ImageNet-C tree), its attacks, then the shifted conditions."""
        clean = [CLEAN] if self.shift is None or self.shift.has_clean_images else []
        return [*clean, *job.attacks, *(c.name for c in self.conditions)]

    @property
    def precision(self) -> Precision:
        """How the attacks craft (counted predictions are strict fp32 whatever it is)."""
        return get_precision(self.config.precision)

    def identity(self) -> dict[str, Any]:
        """What determines the records (:func:`~.config.semantic_config`), and of every module the plan
        carries its source, weights' SHA-256 and image facts."""
        identity = semantic_config(self.config, self.batch_size, self.settings)
        given = {job.name: job.given.identity() for job in self.jobs if job.given is not None}
        return {**identity, "given_models": given} if given else identity

    def outline(self, batches: int) -> dict[str, Any]:
        """What the run sets out to do, stored at once: every model's units, on ``batches`` batches each."""
        return {"batches": batches, "units": {job.name: self.units(job) for job in self.jobs}}


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


def _in_memory(config: EvalConfig) -> bool:
    """Whether the run's images are arrays in memory (digits, CIFAR, MNIST, CIFAR-10-C, CIFAR-10.1)."""
    return is_in_memory(config.data) or (config.shift is not None and get_shift(config.shift).in_memory)


def resolve_workers(config: EvalConfig) -> int:
    """DataLoader processes: image folders decode JPEGs in worker processes; arrays sit in memory."""
    if config.workers is None:
        return 0 if _in_memory(config) else min(8, os.cpu_count() or 1)
    if config.workers < 0:
        raise UserError(f"--workers must not be negative, got {config.workers}")
    return config.workers


def resolve_batch_size(config: EvalConfig, device: torch.device) -> int:
    if config.batch_size is not None:
        if config.batch_size <= 0:
            raise UserError(f"--batch-size must be positive, got {config.batch_size}")
        return config.batch_size
    return DIGITS_BATCH if _in_memory(config) else FOLDER_BATCH[device.type == "cuda"]


def model_job(config: EvalConfig, protocol: Protocol, name: str, given: dict[str, GivenModel]) -> ModelJob:
    """One model's job: a module given from Python, the user's code built now, or a registered model
    with the protocol's model options where it has them."""
    if name in given:
        return ModelJob(name, name, {}, list(config.attacks), given[name])
    spec = get_spec(config.references.get(name, name))
    if spec.reference is not None:
        built = given_from_spec(name, spec, config.seed, config)
        return ModelJob(name, spec.name, {}, list(config.attacks), built)
    options = {k: v for k, v in protocol.model_options.items() if k in spec.options}
    return ModelJob(name, name, options, list(config.attacks))


def model_jobs(config: EvalConfig, protocol: Protocol, given: dict[str, GivenModel] | None = None) -> list[ModelJob]:
    """The models to evaluate (see :func:`model_job`); with ``adaptive``, every model whose spec is
    adaptive again with its adaptive options under the white-box attacks (named ``<model>+adaptive``)."""
    jobs = [model_job(config, protocol, m, given or {}) for m in config.models]
    white = [a for a in config.attacks if get_attack_spec(a).kind == "white-box"]
    if config.adaptive and white:
        for job in list(jobs):
            if job.given is not None:
                continue
            spec = get_spec(job.model)
            if spec.is_adaptive:
                jobs.append(
                    ModelJob(job.name + ADAPTIVE_SUFFIX, job.model, {**job.options, **(spec.adaptive or {})}, white)
                )
    return jobs


def make_plan(config: EvalConfig, given: dict[str, GivenModel] | None = None) -> RunPlan:
    """The run's plan, checked (:func:`check_plan`): one line for anything that cannot run.  ``given``:
    the modules given from Python, by the names ``config.models`` has for them."""
    protocol = get_protocol(config.protocol)
    device = resolve_device(config.device)
    shift = get_shift(config.shift) if config.shift is not None else None
    conditions = shift.conditions(config.corruptions, config.severities) if shift is not None else []
    plan = RunPlan(
        config,
        protocol,
        device,
        resolve_batch_size(config, device),
        {a: attack_settings(config, a) for a in config.attacks},
        resolve_workers(config),
        model_jobs(config, protocol, given),
        shift,
        conditions,
    )
    check_plan(plan)
    return plan


def check_plan(plan: RunPlan) -> None:
    config = plan.config
    get_precision(config.precision, on_gpu=plan.device.type == "cuda")
    for attack in config.attacks:
        spec = get_attack_spec(attack)
        if config.norm not in spec.norms:
            raise UserError(
                f"attack {attack} does not support norm {config.norm} (it supports {', '.join(spec.norms)})"
            )
        if spec.minimum_norm and config.cascade:
            raise UserError(
                f"--cascade runs fixed-eps attacks one after another; {attack} searches each example's smallest "
                "fooling perturbation: run it without --cascade"
            )
        if spec.minimum_norm and plan.protocol.space != "pixel":
            raise UserError(
                f"{attack} measures perturbations in the [0,1] pixel box; protocol {config.protocol} attacks "
                "normalized tensors: use --protocol standard or aa-plus"
            )
    check_shift(plan)
    check_transfer(plan)
    for option, named in (("--checkpoint", config.checkpoints), ("--model-config", config.model_config)):
        missing = sorted(set(named) - set(config.models))
        if missing:
            raise UserError(f"{option} given for {missing[0]!r}, which is not among --model {', '.join(config.models)}")
    registered = sorted(j.name for j in plan.jobs if j.given is None and j.name in config.model_config)
    if registered:
        raise UserError(
            f"--model-config states the facts of your own models; {registered[0]}'s are its registration's "
            "(robeval models lists them)"
        )


def check_transfer(plan: RunPlan) -> None:
    """Transfer attacks need a source model, and a threat model in which it sees the same pixels."""
    config = plan.config
    transfer = [a for a in config.attacks if get_attack_spec(a).kind == "transfer"]
    if transfer and not config.source_model:
        raise UserError(
            f"--attacks {transfer[0]} needs --source-model NAME[=CHECKPOINT]: the model the images are crafted on"
        )
    if config.source_model and not transfer:
        raise UserError("--source-model is for transfer attacks (--attacks transfer-pgd or transfer-apgd-ce)")
    if transfer:
        get_spec(str(config.source_model).partition("=")[0])
        if plan.protocol.space != "pixel":
            raise UserError(
                f"transfer attacks need a pixel-space protocol (standard, aa-plus), not {config.protocol}: "
                "two models normalise their inputs differently"
            )


def check_shift(plan: RunPlan) -> None:
    """A shift that can be run on this data with these attacks (one line otherwise)."""
    config = plan.config
    if plan.shift is None:
        if config.corruptions or config.severities:
            with_conditions = " / ".join(k for k, s in SHIFT_KINDS.items() if s.has_conditions)
            raise UserError(f"--corruptions / --severities choose conditions of --shift {with_conditions}")
        return
    plan.shift.check(config)

"""Checks made before a run is created, so that a user's mistake costs no work and leaves no run.

What is learnt is handed to the run: the data, opened once and reused for every model, and every
checkpoint as it was read, which the plan keeps for the model's load (:meth:`~.plan.RunPlan.opened`).
"""

from __future__ import annotations

from functools import partial

from ..core.errors import UserError
from ..data.examples import EvalData
from ..data.labels import check_classes
from ..data.loading import load_data
from ..models import list_models, model_meta
from ..models.admission import admit_members, admit_model, network_tensors
from ..models.wrapper import ModelMeta
from ..options import option_fields
from .compiled import warn_compiling_on_cpu
from .plan import ModelJob, RunPlan


def preflight(plan: RunPlan) -> EvalData:
    """Raise a one-line :class:`UserError` for anything that would stop the run; return its data."""
    config = plan.config
    warn_compiling_on_cpu(config.compile, plan.device)
    admit_checkpoints_as_members(plan)
    metas = [_job_meta(job, plan) for job in plan.jobs]
    data = plan.shift.load(config, metas[0]) if plan.shift is not None else load_data(config, metas[0])
    check_settings_fit(plan, metas)
    if plan.source is not None:
        metas.append(_source_meta(plan.source, plan, metas))
    for meta in metas:
        if data.input_size is not None and tuple(meta.input_size) != data.input_size:
            raise UserError(
                f"model {meta.name} expects input {tuple(meta.input_size)} but data {config.data!r} "
                f"gives {data.input_size}: {_way_forward(meta, data.input_size)}"
            )
        check_classes(data.label_space, config.data, meta.name, meta.num_classes)
    return data


def _way_forward(meta: ModelMeta, input_size: tuple[int, ...]) -> str:
    """What to run instead: data that fits the model (--data's forms), or the models of its family that
    take the data's input (the digits version of an ImageNet model on the embedded digits)."""
    fitting = [
        s.name for s in list_models() if s.family == meta.family and s.config and s.config.input_size == input_size
    ]
    forms = next(f.metadata["help"] for f in option_fields() if f.name == "data").rstrip(".")
    instead = f", or run the version of its kind that takes {input_size}: {', '.join(fitting)}" if fitting else ""
    return f"give --data that fits it ({forms}){instead}"


def admit_checkpoints_as_members(plan: RunPlan) -> None:
    """Every model's checkpoints (and the transfer source's), each read once (:meth:`~.plan.RunPlan.opened`),
    hold that model, each its own weights (robeval.models.admission.admit_members), before any is admitted
    against its network alone."""
    named = [job for job in plan.jobs if job.name in plan.config.checkpoints]  # not their +adaptive copies
    for job in named + ([plan.source] if plan.source is not None else []):
        opened = [plan.opened(m.checkpoint) for m in job.members if m.checkpoint is not None]
        if opened:  # against the module the plan carries, or the network built on the meta device
            tensors = (
                job.given.module.state_dict
                if job.given is not None
                else partial(network_tensors, job.model, job.options)
            )
            admit_members(job.model, job.name, opened, tensors)


def _job_meta(job: ModelJob, plan: RunPlan, flag: str = "--checkpoint") -> ModelMeta:
    """A model's facts: of a module the plan carries, its own (checked when it was planned: its checkpoint
    loaded, its output seen); else the model admitted (robeval.models.admission: each of its members'
    checkpoints, given by ``flag``, a plugin's network), or its default weights' existence, and its
    registration's facts, or for a model whose facts come with its network (hub models) the network built
    on the meta device to read them."""
    if job.given is not None:
        return job.given.meta
    opened = [plan.opened(m.checkpoint) for m in job.members if m.checkpoint is not None]
    spec = admit_model(job.model, job.options, opened)
    if not opened and not spec.has_default_weights and plan.config.weights != "random":
        raise UserError(
            f"{spec.name} has no public weights; pass {flag} {job.model}=PATH (or --weights random for a smoke test)"
        )
    return model_meta(spec, job.options)


def _source_meta(source: ModelJob, plan: RunPlan, targets: list):
    """The transfer source, checked like a model, taking inputs of the targets' size."""
    meta = _job_meta(source, plan, "--source-model")
    for target in targets:
        if tuple(target.input_size) != tuple(meta.input_size):
            raise UserError(
                f"--source-model {source.name} takes input {tuple(meta.input_size)} but {target.name} takes "
                f"{tuple(target.input_size)}: transfer needs the same images"
            )
    return meta


def check_settings_fit(plan: RunPlan, metas: list) -> None:
    """Settings that depend on the model: targeted attacks need as many other classes as targets."""
    for attack, settings in plan.config.settings.items():
        targets = settings.get("n_target_classes")
        for meta in metas:
            if targets is not None and targets > meta.num_classes - 1:
                raise UserError(
                    f"{attack}.n_target_classes={targets}: {meta.name} has {meta.num_classes} classes, so "
                    f"at most {meta.num_classes - 1} can be targets (every class but the true one)"
                )

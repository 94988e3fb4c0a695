"""Stored adversarial examples crafted again, exactly, through the engine's own code (docs/results.md,
section Seeing adversarial examples again): per-example attacks draw from (run seed, attack, eps,
example) alone, so an image the run crafted need not be stored to be seen again.  Each example is
crafted inside its original batch (the stored batch number and the run's batch size say which examples
were together): a many-step attack can turn another composition's last-bit rounding into another
prediction.  Refusals: :func:`~.protocols.refusal`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..core.errors import UserError
from ..core.records import key_model
from ..data.labels import LabelSpace
from ..models.user_code import check_stored_code
from ..options import EvalConfig
from .config import remake
from .model_run import ModelRun
from .plan import ModelJob, RunPlan, make_plan
from .preflight import preflight
from .run_info import RunLog
from .session import load_source
from .units import run_unit

# What a regenerated record must repeat of the stored one: the prediction, its hits and the
# perturbation's size (and a minimum-norm attack's smallest fooling norm).
COMPARED = ("adv_pred", "adv_top1", "adv_top5", "linf", "l2", "min_norm")


@dataclass
class Crafted:
    """One example as a model of the run saw it: clean and adversarial images ([C, H, W] in the [0,1]
    pixel space) and the record the engine made of it now."""

    model: str
    example: int
    clean: np.ndarray
    adversarial: np.ndarray
    clean_pred: int  # the class predicted on the clean image (records keep only whether it was right)
    record: dict[str, Any]


def regenerate(
    config: dict[str, Any],
    info: dict[str, Any],
    models: list[str],
    attack: str,
    eps: str,
    batches: dict[int, list[int]],
    allowed_code: tuple[str, ...] = (),
    **machine: Any,
) -> tuple[list[Crafted], LabelSpace, int]:
    """Craft examples of a stored run again through the engine (see the module docstring); return them, the
    run's label space and batch size.  ``config`` and ``info``: the run's stored configuration (its identity)
    and description; ``models`` as the records name them (``+adaptive`` included), under ``attack`` at
    ``eps`` (as stored: ``8/255``); ``batches``: batch number -> the wanted examples in it;
    ``allowed_code``: the user's code this command line names, the only code imported; ``machine``: device,
    data_dir, trust_checkpoint, threads (default the run's own count: a reduction may round otherwise)."""
    bases = sorted({key_model(m)[0] for m in models})
    check_stored_code({**config, "models": bases}, allowed_code)  # before any import
    # the stored configuration (one line when this robeval cannot run it) with this machine's options
    stored = EvalConfig.from_identity(config, **{"threads": info.get("threads"), **machine})
    plan = make_plan(remake(stored, bases))
    before, source = torch.get_num_threads(), None  # the run's thread count while crafting, the caller's afterwards
    try:
        if plan.config.threads is not None:  # judged by remake
            torch.set_num_threads(plan.config.threads)
        data = preflight(plan)
        identity = info.get("data", {}).get("identity")
        if identity and data.identity != identity:
            raise UserError(f"the run's examples cannot be read again: stored {identity}, now {data.identity}")
        jobs = {job.name: job for job in plan.jobs}
        source = load_source(plan)
        crafted = [c for name in models for c in _craft(jobs[name], plan, data, source, info, (attack, eps), batches)]
    finally:
        torch.set_num_threads(before)
        if source is not None:
            source.close()
    return crafted, data.label_space, plan.batch_size


def _craft(job: ModelJob, plan: RunPlan, data, source, info, unit: tuple[str, str], batches) -> list[Crafted]:
    """One model (its first member, where it has several checkpoints): its wanted batches attacked by
    the engine's own units under ``unit`` (attack, eps), the wanted examples' images (clean and adversarial,
    in [0,1] pixels), clean predictions and records."""
    model = ModelRun(job, job.members[0], plan, data, set(), RunLog(), source)
    _check_weights(model, info)
    attack, eps = unit[0], next(e for e in plan.config.eps if e.text == unit[1])
    model.todo = {b: [(eps, attack)] for b in batches}  # a shift's conditions are not this request's
    wanted = {e for examples in batches.values() for e in examples}
    pixels, crafted = _pixel_images(model), {}
    for batch in model.batches(sorted(batches)):
        done = run_unit(model, batch, eps, attack)
        assert done.points is not None
        for row, values in enumerate(zip(*done.records.values())):
            record = dict(zip(done.records, values))
            if record["example"] in wanted:
                clean_pred = int(batch.clean_logits[row].argmax())
                images = (pixels(batch.xa[row]), pixels(done.points[row]), clean_pred)
                crafted[int(record["example"])] = Crafted(job.name, int(record["example"]), *images, record)
    return [crafted[e] for e in sorted(crafted)]


def _check_weights(model: ModelRun, info: dict[str, Any]) -> None:
    """The weights loaded now are the run's (the checkpoint's SHA-256 the run stored)."""
    stored = info.get("models", {}).get(model.job.name, {}).get("checkpoint_sha256")
    now = model.meta.get("checkpoint_sha256")
    if stored and now != stored:
        raise UserError(
            f"the weights of {model.job.name} differ from the run's (SHA-256 {str(now)[:12]}, stored "
            f"{stored[:12]}): {model.meta.get('checkpoint')} changed since"
        )


def _pixel_images(run: ModelRun):
    """Attacked tensors back in [0,1] pixels: as they are, or un-normalized under a protocol that
    attacks the normalized tensor."""
    if run.plan.protocol.space == "pixel":
        return lambda x: x.detach().float().cpu().numpy()
    mean, std = run.model.mean[0].to(torch.float32), run.model.std[0].to(torch.float32)
    return lambda x: (x.detach().float() * std.to(x.device) + mean.to(x.device)).cpu().numpy()


@dataclass(frozen=True)
class Check:
    """A regenerated record against the stored one: the columns of :data:`COMPARED` that differ."""

    model: str
    example: int
    differences: dict[str, tuple[Any, Any]]  # column -> (stored, regenerated)

    @property
    def equal(self) -> bool:
        return not self.differences

    def line(self) -> str:
        if self.equal:
            return f"{self.model} example {self.example}: the regenerated record equals the stored one"
        what = "; ".join(f"{c} stored {s!r}, regenerated {r!r}" for c, (s, r) in self.differences.items())
        return f"{self.model} example {self.example} differs from its stored record: {what}"


def check(crafted: Crafted, stored: dict[str, Any]) -> Check:
    """Compare a regenerated record with the stored one, column by column (NaN equals NaN)."""
    differences = {}
    for column in COMPARED:
        a, b = _plain(stored.get(column)), _plain(crafted.record.get(column))
        if a != b and not (a != a and b != b):  # NaN is not itself
            differences[column] = (a, b)
    return Check(crafted.model, crafted.example, differences)


def _plain(value: Any) -> Any:
    """A stored or fresh record value in one form: bools and ints as int, floats as float."""
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    return value.item() if isinstance(value, np.generic) else value

"""What a run evaluates: its configuration, checks of that configuration, and the model jobs.

``semantic_config`` is the part that determines the records; ``--resume`` compares it with the
stored run.  Device, worker count and DataLoader processes are not part of it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any

import torch

from ..attacks import get_attack_spec, resolve_settings
from ..eps import Eps
from ..errors import UserError
from ..models import get_spec
from .checks import ADAPTIVE_SUFFIX
from .protocols import get_protocol

# Default batch sizes.  For 224x224 images on a CPU, batches of 8-32 attack at least as fast as 64
# (benchmarks/batch_size.py: deit-tiny, 2 threads, 1.08-1.16x the img/s of batch 64) while autograd
# keeps ~19 MB of activations per image; on a GPU larger batches pay off.
DIGITS_BATCH = 128
FOLDER_BATCH = {False: 16, True: 64}  # keyed by "runs on CUDA"
AMP_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}  # --amp choices


def _runtime(default: Any) -> Any:
    """A field that changes how a run runs, not its records: not part of the run's identity."""
    return field(default=default, metadata={"identity": False})


@dataclass
class EvalConfig:
    """Everything a run evaluates.  Every field is part of the run's identity (``--resume`` compares
    them) unless it is declared with :func:`_runtime`."""

    models: list[str]
    eps: list[Eps]
    attacks: list[str]
    data: str = "digits"
    n_examples: int | None = None
    norm: str = "Linf"
    protocol: str = "standard"
    checkpoints: dict[str, str] = field(default_factory=dict)
    checkpoint_key: str | None = None
    set_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    seed: int = 0
    batch_size: int | None = None
    device: str = _runtime("auto")
    workers: int = _runtime(0)
    strict_data: bool = False
    trust_checkpoint: bool = _runtime(False)
    adaptive: bool = False
    subset: list[str] | None = None  # a fixed list of images (relative paths), e.g. RobustBench's 5000
    amp: str = "off"  # off | bf16 | fp16: autocast of the model's forward passes
    channels_last: bool = False
    class_map: str | None = None  # FILE: folder name -> model class index (see labels.py)
    weights: str = "default"  # default | random (untrained networks: smoke tests, profiling)
    threads: int | None = _runtime(None)  # CPU threads of this process (None: the measured default)
    shift: str | None = None  # corruptions | imagenet-c | imagenet-a | imagenet-r (robeval.shifts)
    corruptions: list[str] | None = None  # with corruptions / imagenet-c: the corruptions evaluated
    severities: list[int] | None = None  # ... and their severities (1-5)
    source_model: str | None = None  # NAME[=CHECKPOINT]: the model transfer attacks craft on
    evidence_for: str | None = None  # the run whose checklist this run completes (check --run-missing)

    def resolved_device(self) -> torch.device:
        if self.device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        try:
            dev = torch.device(self.device)
        except RuntimeError:
            raise UserError(f"invalid --device {self.device!r}: use auto, cpu, cuda or cuda:N") from None
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise UserError("--device cuda requested but no CUDA GPU is available")
        return dev

    def resolved_batch_size(self) -> int:
        if self.batch_size is not None:
            if self.batch_size <= 0:
                raise UserError(f"--batch-size must be positive, got {self.batch_size}")
            return self.batch_size
        if self.data == "digits":
            return DIGITS_BATCH
        return FOLDER_BATCH[self.resolved_device().type == "cuda"]

    def attack_settings(self, attack: str) -> dict[str, Any]:
        """Protocol defaults updated by the user's ``--set`` overrides, validated."""
        protocol = get_protocol(self.protocol)
        return resolve_settings(attack, {**protocol.settings_for(attack), **self.set_options.get(attack, {})})


def semantic_config(config: EvalConfig) -> dict[str, Any]:
    """What determines the records (compared on --resume): every identity field, with eps as text,
    checkpoints sorted, the batch size resolved and the attack settings as they will be used."""
    out: dict[str, Any] = {}
    for f in fields(config):
        if not f.metadata.get("identity", True):
            continue
        out[f.name] = getattr(config, f.name)
    out["eps"] = [e.text for e in config.eps]
    out["checkpoints"] = dict(sorted(config.checkpoints.items()))
    out["batch_size"] = config.resolved_batch_size()
    out["attack_settings"] = {a: config.attack_settings(a) for a in config.attacks}
    del out["set_options"]  # folded into attack_settings
    return out


def config_difference(stored: dict[str, Any], current: dict[str, Any]) -> str | None:
    """The first key where a stored run's configuration differs from ``current``, or None.

    ``current`` is first put in the form the store keeps (a JSON round trip: tuples become lists)."""
    current = json.loads(json.dumps(current, sort_keys=True, default=str))
    for key in sorted(set(stored) | set(current)):
        if stored.get(key) != current.get(key):
            return f"{key}: stored {stored.get(key)!r}, now {current.get(key)!r}"
    return None


def validate_config(config: EvalConfig) -> None:
    get_protocol(config.protocol)
    if config.amp not in ("off", *AMP_DTYPES):
        raise UserError(f"invalid --amp {config.amp!r}: choose off, bf16 or fp16")
    if config.amp == "fp16" and config.resolved_device().type != "cuda":
        raise UserError("--amp fp16 needs a CUDA device; use --amp bf16 on CPU")
    for attack in config.attacks:
        spec = get_attack_spec(attack)
        if config.norm not in spec.norms:
            raise UserError(f"attack {attack} does not support norm {config.norm} (it supports {', '.join(spec.norms)})")
        if spec.minimum_norm and get_protocol(config.protocol).space != "pixel":
            raise UserError(f"{attack} measures perturbations in the [0,1] pixel box; protocol {config.protocol} attacks "
                            "normalized tensors: use --protocol standard or aa-plus")
    validate_shift(config)
    validate_transfer(config)
    missing = sorted(set(config.checkpoints) - set(config.models))
    if missing:
        raise UserError(f"--checkpoint given for {missing[0]!r}, which is not among --model {', '.join(config.models)}")


def validate_transfer(config: EvalConfig) -> None:
    """Transfer attacks need a source model, and a threat model in which it sees the same pixels."""
    transfer = [a for a in config.attacks if get_attack_spec(a).kind == "transfer"]
    if transfer and not config.source_model:
        raise UserError(f"--attacks {transfer[0]} needs --source-model NAME[=CHECKPOINT]: the model the images are crafted on")
    if config.source_model and not transfer:
        raise UserError("--source-model is for transfer attacks (--attacks transfer-pgd or transfer-apgd-ce)")
    if transfer:
        get_spec(config.source_model.partition("=")[0])
        if get_protocol(config.protocol).space != "pixel":
            raise UserError(f"transfer attacks need a pixel-space protocol (standard, aa-plus), not {config.protocol}: "
                            "two models normalise their inputs differently")


def validate_shift(config: EvalConfig) -> None:
    """A shift that can be run on this data with these attacks (one line otherwise)."""
    from ..shifts import get_shift

    if config.shift is None:
        if config.corruptions or config.severities:
            raise UserError("--corruptions / --severities choose conditions of --shift corruptions or --shift imagenet-c")
        return
    kind = get_shift(config.shift)
    if kind.classes and (config.corruptions or config.severities):
        raise UserError(f"--shift {config.shift} has no corruptions or severities to choose")
    if (kind.tree or kind.classes) and config.data == "digits":
        raise UserError(f"--shift {config.shift} reads a copy of that data set: pass --data PATH "
                        "(the digits demo takes --shift corruptions)")
    if kind.tree and config.attacks:
        raise UserError("--shift imagenet-c holds no clean images to attack: run the attacks on the clean "
                        "validation folder with --shift corruptions, or without --attacks here")


@dataclass
class ModelJob:
    """One column of results: a registered model with options and the attacks it faces."""

    name: str
    model: str
    options: dict[str, Any]
    attacks: list[str]


def model_jobs(config: EvalConfig) -> list[ModelJob]:
    """The models to evaluate, with the protocol's model options where a model has them (the token
    median of ``nielsen2024``); with ``adaptive``, every model whose spec is adaptive again with its
    adaptive options under the white-box attacks (named ``<model>+adaptive``)."""
    protocol = get_protocol(config.protocol)
    jobs = []
    for m in config.models:
        spec = get_spec(m)
        options = {k: v for k, v in protocol.model_options.items() if k in spec.options}
        jobs.append(ModelJob(m, m, options, list(config.attacks)))
    white = [a for a in config.attacks if get_attack_spec(a).kind == "white-box"]
    if config.adaptive and white:
        for job in list(jobs):
            spec = get_spec(job.model)
            if spec.is_adaptive:
                jobs.append(ModelJob(job.name + ADAPTIVE_SUFFIX, job.model, {**job.options, **spec.adaptive}, white))
    return jobs


def job_units(job: ModelJob, config: EvalConfig) -> list[str]:
    """What one model's run evaluates on every batch at every eps: the clean images (unless the data
    has none: an ImageNet-C tree), its attacks, then the shifted conditions."""
    from ..shifts.catalog import get_shift
    from ..shifts.datasets import config_conditions

    has_clean = config.shift is None or not get_shift(config.shift).tree
    return [*(["clean"] if has_clean else []), *job.attacks, *(c.name for c in config_conditions(config))]


def model_order(models: list[str]) -> list[str]:
    """Table order: each model, then its adaptive evaluation."""
    return [name for base in models for name in (base, base + ADAPTIVE_SUFFIX)]

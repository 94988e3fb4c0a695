"""What a run evaluates: its configuration, checks of that configuration, and the model jobs.

``semantic_config`` is the part that determines the records; ``--resume`` compares it with the
stored run.  Device, worker count and DataLoader processes are not part of it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
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


@dataclass
class EvalConfig:
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
    device: str = "auto"
    workers: int = 0
    strict_data: bool = False
    trust_checkpoint: bool = False
    adaptive: bool = False
    subset: list[str] | None = None  # a fixed list of images (relative paths), e.g. RobustBench's 5000
    amp: str = "off"  # off | bf16 | fp16: autocast of the model's forward passes
    channels_last: bool = False

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
    """What determines the records (compared on --resume); device and worker count do not."""
    return {
        "models": list(config.models), "eps": [e.text for e in config.eps], "attacks": list(config.attacks),
        "data": config.data, "n_examples": config.n_examples, "norm": config.norm, "protocol": config.protocol,
        "checkpoints": dict(sorted(config.checkpoints.items())), "checkpoint_key": config.checkpoint_key,
        "attack_settings": {a: config.attack_settings(a) for a in config.attacks},
        "seed": config.seed, "batch_size": config.resolved_batch_size(),
        "strict_data": config.strict_data, "adaptive": config.adaptive, "amp": config.amp, "subset": config.subset,
        "channels_last": config.channels_last,
    }


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
    missing = sorted(set(config.checkpoints) - set(config.models))
    if missing:
        raise UserError(f"--checkpoint given for {missing[0]!r}, which is not among --model {', '.join(config.models)}")


@dataclass
class ModelJob:
    """One column of results: a registered model with options and the attacks it faces."""

    name: str
    model: str
    options: dict[str, Any]
    attacks: list[str]


def model_jobs(config: EvalConfig) -> list[ModelJob]:
    """The models to evaluate; with ``adaptive``, elliptical models again with gradients through M
    under the white-box attacks (named ``<model>+adaptive``)."""
    jobs = [ModelJob(m, m, {}, list(config.attacks)) for m in config.models]
    if config.adaptive:
        white = [a for a in config.attacks if get_attack_spec(a).kind == "white-box"]
        for m in config.models:
            if get_spec(m).family == "deit-elliptical" and white:
                jobs.append(ModelJob(m + ADAPTIVE_SUFFIX, m, {"grad_through_m": True}, white))
    return jobs

"""The evaluation engine: models x batches x eps x attacks -> per-example records.

For each model and batch the clean pass runs once (under inference mode) and is shared by every
eps and attack; each attack then produces an adversarial batch that is verified against the threat
model before it is counted.  Records hold everything a table needs; summaries are computed from them.
"""

from __future__ import annotations

import hashlib
import platform
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol as TypingProtocol

import pandas as pd
import torch
from torch import nn

from .. import __version__
from ..attacks import create, get_attack_spec, resolve_settings
from ..eps import Eps
from ..errors import UserError
from ..models import load_model, set_elliptical_options
from .data import load_data
from .metrics import RECORD_COLUMNS, perturbation_norms, summarize, topk_hits
from .protocols import get_protocol

BOUND_TOLERANCE = 1e-6


class AttackBoundsError(RuntimeError):
    """An attack returned a point outside the threat model: a bug in that attack."""


class PassCounter(nn.Module):
    """Counts images sent forward through ``net`` and gradients flowing back through its output."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net
        self.forward_images = 0
        self.backward_images = 0

    def reset(self) -> None:
        self.forward_images = self.backward_images = 0

    def _count_backward(self, n: int):
        def hook(grad: torch.Tensor) -> None:
            self.backward_images += n

        return hook

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.net(x)
        self.forward_images += x.shape[0]
        if out.requires_grad:
            out.register_hook(self._count_backward(x.shape[0]))
        return out


class Reporter(TypingProtocol):
    def start(self, tasks: list[tuple[str, str, str]], batches: int, examples: int) -> None: ...
    def advance(self, model: str, eps: str, attack: str, images: int) -> None: ...
    def note(self, text: str) -> None: ...
    def stop(self) -> None: ...


class NullReporter:
    def start(self, tasks, batches, examples) -> None:
        pass

    def advance(self, model, eps, attack, images) -> None:
        pass

    def note(self, text) -> None:
        pass

    def stop(self) -> None:
        pass


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
        return 128 if self.data == "digits" else 64

    def attack_settings(self, attack: str) -> dict[str, Any]:
        """Protocol defaults updated by the user's ``--set`` overrides, validated."""
        protocol = get_protocol(self.protocol)
        return resolve_settings(attack, {**protocol.settings_for(attack), **self.set_options.get(attack, {})})


@dataclass
class EvalResult:
    records: pd.DataFrame
    summary: pd.DataFrame
    run: dict[str, Any]


def derive_seed(*parts: Any) -> int:
    """A 31-bit seed from the run seed and the unit's identity (attack, eps, batch index)."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def verify_adversarial(attack: str, x_adv: torch.Tensor, x: torch.Tensor, eps: float, norm: str,
                       box: tuple[float, float] | None) -> None:
    """Abort when ``x_adv`` leaves the eps ball (around ``x`` clipped to the box) or the box.

    An example returned unchanged is always valid (under ``nielsen2024`` the clean normalized
    input lies outside AutoAttack's [0,1] box, and AutoAttack returns it for unfooled points).
    """
    if x_adv.shape != x.shape:
        raise AttackBoundsError(f"attack {attack} returned shape {tuple(x_adv.shape)} for input {tuple(x.shape)}")
    if not torch.isfinite(x_adv).all():
        raise AttackBoundsError(f"attack {attack} returned non-finite values")
    changed = ~(x_adv == x).flatten(1).all(1)
    if not changed.any():
        return
    x_adv, x = x_adv[changed], x[changed]
    anchor = x if box is None else x.clamp(*box)
    delta = (x_adv - anchor).flatten(1).double()
    size = delta.abs().amax(1) if norm == "Linf" else delta.norm(dim=1)
    worst = float(size.max())
    if worst > eps + BOUND_TOLERANCE:
        raise AttackBoundsError(f"attack {attack} left the {norm} ball: perturbation {worst:.8f} > eps {eps:.8f}")
    if box is not None:
        lo, hi = float(x_adv.min()), float(x_adv.max())
        if lo < box[0] - BOUND_TOLERANCE or hi > box[1] + BOUND_TOLERANCE:
            raise AttackBoundsError(f"attack {attack} left the input range {box}: values in [{lo:.6f}, {hi:.6f}]")


def versions() -> dict[str, str]:
    import timm

    return {"robeval": __version__, "torch": torch.__version__, "timm": timm.__version__,
            "python": platform.python_version()}


def _check_input(meta, x: torch.Tensor, data: str) -> None:
    expected = tuple(meta.input_size)
    if tuple(x.shape[1:]) != expected:
        raise UserError(f"model {meta.name} expects input {expected} but data {data!r} gives {tuple(x.shape[1:])}")


def run_evaluation(config: EvalConfig, reporter: Reporter | None = None) -> EvalResult:
    """Evaluate every model of ``config`` on its data under every eps and attack."""
    reporter = reporter or NullReporter()
    protocol = get_protocol(config.protocol)
    device = config.resolved_device()
    batch_size = config.resolved_batch_size()
    for attack in config.attacks:
        spec = get_attack_spec(attack)
        if config.norm not in spec.norms:
            raise UserError(f"attack {attack} does not support norm {config.norm} (it supports {', '.join(spec.norms)})")
    settings = {a: config.attack_settings(a) for a in config.attacks}
    missing = sorted(set(config.checkpoints) - set(config.models))
    if missing:
        raise UserError(f"--checkpoint given for {missing[0]!r}, which is not among --model {', '.join(config.models)}")

    started = time.time()
    columns: dict[str, list] = {c: [] for c in RECORD_COLUMNS}
    models_meta: dict[str, dict] = {}
    timings: dict[str, float] = {}
    data_info: dict[str, Any] = {}

    for model_name in config.models:
        model = load_model(model_name, checkpoint=config.checkpoints.get(model_name),
                           checkpoint_key=config.checkpoint_key, device=device)
        options = protocol.model_options.get(model.meta.family, {})
        if options:
            set_elliptical_options(model, **options)
            model.meta.options.update(options)
        models_meta[model_name] = asdict(model.meta)
        data = load_data(config.data, model.meta, config.n_examples)
        data_info = {"data": data.name, "identity": data.identity, "n": len(data.indices),
                     "num_classes": data.num_classes}
        target: nn.Module = model if protocol.space == "pixel" else model.net
        counted = PassCounter(target)
        attacks = {(e.text, a): create(a, counted, e.value, norm=config.norm, seed=config.seed,
                                       clip=protocol.box(a), **settings[a])
                   for e in config.eps for a in config.attacks}
        nb = data.num_batches(batch_size)
        reporter.start([(model_name, e.text, a) for e in config.eps for a in config.attacks], nb, len(data.indices))
        for b, (idx, x, y) in enumerate(data.batches(batch_size, workers=config.workers, pin_memory=device.type == "cuda")):
            if b == 0:
                _check_input(model.meta, x, config.data)
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            xa = x if protocol.space == "pixel" else model.normalize(x)
            with torch.inference_mode():
                clean_logits = target(xa)
            clean1, clean5 = topk_hits(clean_logits, y)
            pred = clean_logits.argmax(1)
            n = len(y)

            def emit(attack: str, eps: Eps, adv1, adv5, adv_pred, linf, l2, fwd: float, bwd: float) -> None:
                columns["model"].extend([model_name] * n)
                columns["attack"].extend([attack] * n)
                columns["eps"].extend([eps.text] * n)
                columns["eps_value"].extend([eps.value] * n)
                columns["batch"].extend([b] * n)
                columns["example"].extend(idx.tolist())
                columns["label"].extend(y.tolist())
                columns["clean_top1"].extend(clean1.tolist())
                columns["clean_top5"].extend(clean5.tolist())
                columns["adv_top1"].extend(adv1.tolist())
                columns["adv_top5"].extend(adv5.tolist())
                columns["adv_pred"].extend(adv_pred.tolist())
                columns["linf"].extend(linf.tolist())
                columns["l2"].extend(l2.tolist())
                columns["forward_passes"].extend([fwd] * n)
                columns["backward_passes"].extend([bwd] * n)

            zeros = torch.zeros(n, dtype=torch.float64)
            for eps in config.eps:
                emit("clean", eps, clean1, clean5, pred, zeros, zeros, 1.0, 0.0)
                for attack in config.attacks:
                    tick = time.perf_counter()
                    labels = pred if protocol.label_source(attack) == "predicted" else y
                    counted.reset()
                    x_adv = attacks[(eps.text, attack)](xa, labels, seed=derive_seed(config.seed, attack, eps.text, b))
                    verify_adversarial(attack, x_adv, xa, eps.value, config.norm, protocol.box(attack))
                    fwd, bwd = counted.forward_images / n, counted.backward_images / n
                    with torch.inference_mode():
                        adv_logits = target(x_adv)
                    adv1, adv5 = topk_hits(adv_logits, y)
                    linf, l2 = perturbation_norms(x_adv, xa)
                    emit(attack, eps, adv1, adv5, adv_logits.argmax(1), linf, l2, fwd + 1.0, bwd)
                    key = f"{model_name}|{eps.text}|{attack}"
                    timings[key] = timings.get(key, 0.0) + time.perf_counter() - tick
                    reporter.advance(model_name, eps.text, attack, n)
        reporter.stop()

    records = pd.DataFrame(columns)
    summary = summarize(records, config.attacks, models_meta, config.norm, [e.text for e in config.eps])
    summary.insert(len(summary.columns), "protocol", config.protocol)
    summary.insert(len(summary.columns), "data", data_info.get("data", config.data))
    summary.insert(len(summary.columns), "seed", config.seed)
    run = {
        "created": datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(time.time() - started, 3),
        "config": {**asdict(config), "eps": [{"text": e.text, "value": e.value} for e in config.eps]},
        "protocol": {"name": protocol.name, "description": protocol.description, "space": protocol.space,
                     "valid_threat_model": protocol.valid_threat_model,
                     "labels": {a: protocol.label_source(a) for a in config.attacks},
                     "box": {a: protocol.box(a) for a in config.attacks}},
        "attack_settings": settings,
        "attack_implementations": {a: get_attack_spec(a).implementation for a in config.attacks},
        "models": models_meta,
        "data": data_info,
        "device": str(device),
        "batch_size": batch_size,
        "seed": config.seed,
        "versions": versions(),
        "timings_seconds": {k: round(v, 4) for k, v in timings.items()},
    }
    return EvalResult(records, summary, run)

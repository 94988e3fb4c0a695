"""Every option of a run, declared once (docs/layout.md): a field of :class:`EvalConfig` with its help,
command-line flags and whether it belongs to the run's identity (what ``--resume`` compares).
Torch-free, so the command line parses and checks its options before torch loads.

A field holds what the engine uses (``eps`` a list of :class:`~robeval.eps.Eps`); the command line and
the API give the user's form (``"1/255,2/255"``), which :func:`robeval.evaluation.config.make_config`
parses once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, Field, dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import Any, Optional

from .core.defaults import DEFAULT_EPS, DEFAULT_MODELS, DEFAULT_N_EXAMPLES, SELECTIONS, SPLITS
from .core.eps import Eps, parse_eps_list
from .core.errors import UserError
from .core.precision import PRECISIONS


def option(
    default: Any = MISSING,
    *,
    help: str,
    flags: tuple[str, ...] = (),
    cli_type: Any = None,
    cli_default: Any = MISSING,
    identity: bool = True,
    factory: Any = MISSING,
    cli: bool = True,
    choices: tuple[str, ...] = (),
    least: int | None = None,
) -> Any:
    """A field of :class:`EvalConfig` with its help and command-line form (``cli_type``: what the
    command line gives when it differs from the field's own type, e.g. comma text for a list), and what
    :func:`robeval.evaluation.config.make_config` allows of it alone: one of ``choices``, at least ``least``."""
    metadata = dict(help=help, identity=identity, flags=flags, cli_type=cli_type, cli=cli, choices=choices, least=least)
    metadata["cli_default"] = default if cli_default is MISSING else cli_default
    if factory is not MISSING:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def repeatable(factory: Any, flags: tuple[str, ...], **rest: Any) -> Any:
    """An option the command line gives as a repeatable flag (a list of texts, none by default), the
    field holding what ``factory`` makes."""
    return option(factory=factory, flags=flags, cli_type=Optional[list[str]], cli_default=None, **rest)


@dataclass
class EvalConfig:
    """Everything a run evaluates, one field per option (see the module docstring)."""

    models: list[str] = repeatable(
        lambda: list(DEFAULT_MODELS),
        ("--model", "-m"),
        help="Model name (repeatable; glob patterns like 'digits-*'), or your own code: PATH.py:CALLABLE or "
        "PKG.MODULE:CALLABLE (a callable returning an nn.Module), optionally =NAME for the tables. "
        "Default: the two embedded digits models.",
    )
    references: dict[str, str] = option(
        factory=dict,
        cli=False,
        help="The code behind each model named with REFERENCE=NAME (name -> PATH.py:CALLABLE or PKG.MODULE:CALLABLE).",
    )
    model_config: dict[str, dict[str, Any]] = repeatable(
        dict,
        ("--model-config",),
        identity=False,  # what it states is in the run's identity with the model's other facts
        help="[MODEL.]KEY=VALUE (repeatable): what your own model takes and gives, where its code does not say "
        "(KEY: input_size=C,H,W, num_classes, mean, std, interpolation, crop_pct).",
    )
    checkpoints: dict[str, list[str]] = repeatable(
        dict,
        ("--checkpoint", "-c"),
        help="PATH, or MODEL=PATH (repeatable, once per model): .pth/.pt/.safetensors weights. Several "
        "checkpoints of one model (its members, one per training seed): MODEL=A,B,C or a quoted glob "
        "'MODEL=seeds/MODEL-seed*.safetensors'; tables show their mean ± std.",
    )
    checkpoint_key: Optional[str] = option(
        None, help="Key holding the weights in a training checkpoint (model, model_ema, state_dict)."
    )
    data: str = option(
        "digits",
        help="'digits' (embedded), a published data set read from --data-dir (cifar10, cifar100, mnist), "
        "or an ImageNet-style folder PATH/<wnid>/*.JPEG.",
    )
    data_dir: str = option(
        "./data",
        identity=False,
        help="Where --data cifar10/cifar100/mnist finds its published files (RobustBench's default ./data).",
    )
    split: str = option("test", choices=SPLITS, help="The split of --data cifar10/cifar100/mnist: test or train.")
    selection: str = option(
        "balanced",
        choices=SELECTIONS,
        help="Which --n-examples of the data: balanced (class round-robin, deterministic) or first "
        "(the first N, RobustBench's convention for CIFAR).",
    )
    n_examples: Optional[int] = option(
        None,
        least=1,
        flags=("--n-examples", "-n"),
        help=f"Class-balanced subset size (digits default {DEFAULT_N_EXAMPLES} of 449; folder default: all); "
        "with --subset a prefix of the list.",
    )
    subset: Optional[list[str]] = option(
        None, cli_type=Optional[str], help="robustbench-5000: RobustBench's fixed ImageNet list (shipped with robeval)."
    )
    subset_file: Optional[str] = option(
        None,
        cli_type=Optional[Path],
        identity=False,
        help="A file listing images (paths relative to --data), one per line.",
    )
    eps: list[Eps] = option(
        factory=list,
        cli_type=str,
        cli_default=DEFAULT_EPS,
        help="Budget(s): 3/255, 0.0118, or a comma list 1/255,2/255.",
    )
    norm: str = option("Linf", help="Threat model norm: Linf or L2.")
    attacks: list[str] = option(
        factory=list,
        cli_type=Optional[str],
        cli_default=None,
        help="Comma list of attacks, 'all' or 'none' (see `robeval attacks`). Default: all; with --shift: none.",
    )
    source_model: Optional[str] = option(
        None,
        help="NAME[=CHECKPOINT]: the model transfer attacks (transfer-pgd, transfer-apgd-ce) craft their images on.",
    )
    shift: Optional[str] = option(
        None,
        help="Distribution shift: corruptions (ImageNet-C's, generated from --data), imagenet-c / imagenet-3dcc / "
        "imagenet-c-bar (pre-generated trees ROOT/<corruption>/<severity>/<wnid>/), cifar10-c / cifar100-c "
        "(ROOT/<corruption>.npy + labels.npy), imagenet-a, imagenet-r, imagenet-v2 (ROOT/<class index>/), "
        "imagenet-sketch (ROOT[/sketch]/<wnid>/) or cifar10.1 (ROOT/cifar10.1_v6_data.npy + _labels.npy).",
    )
    corruptions: Optional[list[str]] = option(
        None,
        cli_type=Optional[str],
        help="With a --shift that has corruptions: a comma list, or a group of that shift's set. ImageNet-C's "
        "(corruptions, imagenet-c, cifar10-c, cifar100-c): a family (noise, blur, weather, digital, extra), "
        "common (the 15, default) or all (19); imagenet-3dcc (12) and imagenet-c-bar (10): all (default).",
    )
    severities: Optional[list[int]] = option(
        None,
        cli_type=Optional[str],
        help="With a --shift that has corruptions: comma list of severities 1-5 (default all five).",
    )
    protocol: str = option(
        "standard",
        help="standard (pixel space), aa-plus (AutoAttack's plus version: its six "
        "attacks unless --attacks), aa-rand (AutoAttack's rand version: APGD-CE and APGD-DLR with EOT over 20 "
        "passes), fast (AutoAttack's attacks at a fraction of its cost, audited, with a printed bound on "
        "AutoAttack's robust accuracy: for screening, never a leaderboard number) or nielsen2024 (paper "
        "reproduction only).",
    )
    settings: dict[str, dict[str, Any]] = repeatable(
        dict,
        ("--set",),
        help="Override an attack setting: ATTACK.KEY=VALUE (repeatable).",
    )  # in the config: every attack of the run -> every setting it runs with (protocol's, defaults, --set)
    seed: int = option(0, help="Seed for every random choice; same seed, same per-example records.")
    batch_size: Optional[int] = option(
        None, least=1, help="Images per batch (digits 128; image folders 64 on a GPU, 16 on a CPU)."
    )  # None: by the data and device (the plan's config, and so the identity, holds the number)
    device: str = option("auto", identity=False, help="auto, cpu, cuda or cuda:N.")
    workers: Optional[int] = option(
        None,
        least=0,
        identity=False,
        help="DataLoader worker processes, at most one per core (default: 0 for digits, up to 8 for folders).",
    )
    precision: str = option(
        "fp32",
        choices=tuple(PRECISIONS),
        help="How attacks craft: fp32 (strict, TF32 off), tf32 (GPU), bf16 or fp16 (GPU) autocast. "
        "Every counted prediction runs in strict fp32; reduced precisions are re-checked in fp32.",
    )
    cascade: bool = option(
        False,
        help="AutoAttack's cascade: each attack only on the examples every earlier one failed on; each "
        "attack's row is the robust accuracy after it and those before (the last is the worst case).",
    )
    channels_last: bool = option(False, help="Channels-last memory format for model and images.")
    compile: str = option(
        "auto",
        choices=("auto", "on", "off"),  # robeval.evaluation.compiled
        identity=False,
        help="torch.compile the model's passes, batches padded to a few bucket sizes: on, off, or auto (on for "
        "CUDA, off on the CPU, where it was measured not to pay at these sizes; docs/speed.md).",
    )
    strict_data: bool = option(False, help="Unreadable image files are an error (default: skipped and listed).")
    class_map: Optional[str] = option(
        None,
        cli_type=Optional[Path],
        help="FILE of 'FOLDER INDEX' lines (or JSON): the "
        "model class of each image folder, when the folders are no ImageNet wnids or a "
        "subset of the model's classes.",
    )
    weights: str = option(
        "default",
        choices=("default", "random"),
        help="default (checkpoint, timm hub or embedded zoo) or random (untrained: smoke "
        "tests; marked in every table).",
    )
    threads: Optional[int] = option(
        None,
        least=1,
        identity=False,
        help="CPU threads, at most one per core (default: every core, fewer while other processes want cores; "
        "see README).",
    )
    trust_checkpoint: bool = option(
        False, identity=False, help="Allow full unpickling of checkpoints (runs code from the file!)."
    )
    adaptive: bool = option(
        False,
        help="Also attack models with a data-dependent attention weight (elliptical, SPKDE) "
        "with gradients through it (white-box attacks).",
    )
    evidence_for: Optional[str] = option(
        None, cli=False, help="The run whose checklist this run completes (check --run-missing)."
    )

    @cached_property
    def source(self) -> tuple[str, str | None] | None:
        """``source_model`` split once (:func:`split_source`): the transfer source's name and checkpoint."""
        return split_source(self.source_model)

    def to_identity(self) -> dict[str, Any]:
        """What determines the records, as the store keeps it (plain JSON data).  A model's one checkpoint
        is its path, as runs stored it before members; ``references`` only when there are some, as runs
        were stored before models of the user's code existed."""
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in identity_fields()}
        out.update(eps=[e.text for e in self.eps], checkpoints=self.stored_checkpoints())
        out["attack_settings"] = out.pop("settings")
        if not out["references"]:
            del out["references"]
        return json.loads(json.dumps(out, default=str))  # the JSON form the store gives back (tuples as lists)

    def stored_checkpoints(self) -> dict[str, str | list[str]]:
        """The checkpoints as a run stores them, sorted by model (see :meth:`to_identity`)."""
        return {m: paths[0] if len(paths) == 1 else list(paths) for m, paths in sorted(self.checkpoints.items())}

    @classmethod
    def from_identity(cls, identity: Mapping[str, Any], **outside: Any) -> EvalConfig:
        """The configuration whose :meth:`to_identity` is ``identity`` (the modules it carried, under
        ``given_models``, are the plan's); ``outside``: options that are no part of it (device,
        data_dir, threads, ...).  One line for a key this robeval has no option for."""
        values = {k: v for k, v in identity.items() if k not in IDENTITY_FORMS}
        unknown = sorted(set(values) - {f.name for f in identity_fields()})
        if unknown:
            key = unknown[0]
            raise UserError(f"the stored run's configuration cannot be rebuilt here: {key}: stored {identity[key]!r}")
        values.update(
            eps=parse_eps_list(list(identity["eps"]), identity.get("norm", "Linf")),
            settings={a: dict(s) for a, s in identity.get("attack_settings", {}).items()},
            checkpoints={
                m: [p] if isinstance(p, str) else list(p) for m, p in (identity.get("checkpoints") or {}).items()
            },
        )
        return cls(**values, **outside)


def split_source(text: str | None) -> tuple[str, str | None] | None:
    """``--source-model NAME[=CHECKPOINT]``: the transfer source's name and checkpoint (None: its default
    weights); None without a source."""
    if not text:
        return None
    name, _, checkpoint = text.partition("=")
    return name, checkpoint or None


def option_fields() -> list[Field]:
    """The fields of :class:`EvalConfig` that the command line offers."""
    return [f for f in fields(EvalConfig) if f.metadata["cli"]]


def identity_fields() -> list[Field]:
    """The fields that determine a run's records (``--resume`` compares them)."""
    return [f for f in fields(EvalConfig) if f.metadata["identity"]]


IDENTITY_FORMS = ("eps", "attack_settings", "given_models")  # identity keys read in a form of their own


def option_default(name: str) -> Any:
    """The default of run option ``name`` (a fresh copy for a list or dict)."""
    declared = next(f for f in fields(EvalConfig) if f.name == name)
    return declared.default_factory() if declared.default is MISSING else declared.default  # type: ignore[misc,operator]


def identity_difference(stored: Mapping[str, Any], identity: Mapping[str, Any]) -> str | None:
    """The first key where a stored identity differs from ``identity`` (both in their JSON form), or None."""
    current = json.loads(json.dumps(identity, sort_keys=True, default=str))
    for key in sorted(set(stored) | set(current)):
        if stored.get(key) != current.get(key):
            return f"{key}: stored {stored.get(key)!r}, now {current.get(key)!r}"
    return None


def newest_matching(candidates: Iterable[tuple[str, Mapping[str, Any]]], identity: Mapping[str, Any]) -> str | None:
    """The first of ``candidates`` (run id, stored identity; newest first) stored with ``identity``."""
    return next((run_id for run_id, stored in candidates if identity_difference(stored, identity) is None), None)

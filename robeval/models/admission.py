"""What robeval admits of a model before a run exists: every check of what a user can get wrong about
a model, in one place, made by every path that evaluates or trains one before the results store is
opened, so a mistake is one line and leaves no run behind (which checks, which paths:
docs/hardening.md, section The rules, 3 and 7).  Here: a checkpoint's tensors against the network built
on the meta device (:func:`~.checkpoint.check_fit`), a model's stated facts (:func:`admit_config`), code
robeval has not seen (:func:`built_network`, :func:`check_output`) and a model's members
(:func:`admit_members`).  The checks read what one read of each file gave
(:class:`~.checkpoint.OpenedCheckpoint`), which the plan carries on to the model's load.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import nn

from ..core.errors import USER_CODE_RAISES, UserError, raised
from ..model_config import ModelConfig
from ..references import names_one_model
from .checkpoint import OpenedCheckpoint, RecordedModel, check_fit
from .names import get_spec
from .registry import ModelSpec

CHECKED_BATCH = 2  # images in the output check's zero batch


def network_tensors(name: str, options: Mapping[str, Any]) -> dict[str, torch.Tensor]:
    """The tensors of model ``name``'s network built on the meta device (names, shapes, dtypes; no memory)."""
    from . import build_network

    with torch.device("meta"):
        return build_network(name, **options).state_dict()


def admit_members(
    model: str,
    label: str,
    opened: Sequence[OpenedCheckpoint],
    network: Callable[[], Mapping[str, torch.Tensor]],
) -> None:
    """``opened``, the checkpoints given for model ``label`` (built as ``model``), hold that model, each its
    own weights (what is refused: docs/hardening.md, section The rules, 7): each member's tensors admitted
    as those of ``network`` (the model's, built when asked) before they are hashed.  One file given twice
    (two spellings, a link) is refused before: robeval.evaluation.config.member_paths."""
    recorded = {checkpoint.path: checkpoint.recorded for checkpoint in opened}
    for path, found in recorded.items():
        if found is not None and found.names_robeval_model and not names_one_model(found.name, (model, label)):
            shown = label if label == model else f"{label} ({model})"
            raise UserError(
                f"--checkpoint {label}: {path} records model {found.name} in its {found.where}, not {shown}: "
                f"it holds another model's weights"
            )
    _refuse_two_models(label, recorded)
    if len(opened) > 1:
        _refuse_repeated(label, opened, lambda checkpoint: checkpoint.sha256, "bytes")
        own = network()
        for checkpoint in opened:
            check_fit(own, checkpoint.state, model, f"checkpoint {checkpoint.path}")  # before the weights are hashed
        _refuse_repeated(label, opened, lambda checkpoint: checkpoint.weights_sha256, "weights")


def _refuse_two_models(label: str, recorded: Mapping[str, RecordedModel | None]) -> None:
    """Members of one model that name two models in the same kind of record: a glob that took in another's."""
    first: dict[str, tuple[str, str]] = {}
    for path, found in recorded.items():
        if found is None:
            continue
        other, name = first.setdefault(found.where, (path, found.name))
        if name != found.name:
            raise UserError(
                f"--checkpoint {label}: its members record two models in their {found.where}: {other} records "
                f"{name}, {path} records {found.name}; the members of a model are checkpoints of that one model"
            )


def _refuse_repeated(
    label: str, opened: Sequence[OpenedCheckpoint], fingerprint: Callable[[OpenedCheckpoint], str], held: str
) -> None:
    """Two members whose files hold the same ``held`` (``fingerprint``: its SHA-256): one set of weights
    counted as two members."""
    seen: dict[str, str] = {}
    for checkpoint in opened:
        sha = fingerprint(checkpoint)
        if sha in seen:
            raise UserError(
                f"--checkpoint {label}: {seen[sha]} and {checkpoint.path} hold the same {held} (SHA-256 {sha[:12]}): "
                "one set of weights counted as two members; each member is a checkpoint of its own"
            )
        seen[sha] = checkpoint.path


def admit_config(config: ModelConfig, name: str) -> ModelConfig:
    """``config`` (a user's model's facts, every field filled) fits its input: as many mean and std
    values as the input has channels (one of each would be stretched over three, two over one channel
    would double the batch's channels), all finite."""
    assert config.input_size is not None
    channels = config.input_size[0]
    for field in ("mean", "std"):
        values = tuple(getattr(config, field) or ())
        if len(values) != channels:
            raise UserError(
                f"model {name} takes {channels}-channel images (input_size {config.input_size}) but states "
                f"{len(values)} {field} value{'s' * (len(values) != 1)} {values}: give one per channel"
            )
        if not all(math.isfinite(v) for v in values):
            raise UserError(f"model {name} states {field} {values}: every value must be a finite number")
    return config


def _forward_zeros(module: nn.Module, name: str, size: tuple[int, int, int]) -> Any:
    first = next(iter(module.parameters()), None)
    x = torch.zeros(CHECKED_BATCH, *size, device=first.device if first is not None else "cpu")
    training = module.training
    module.eval()
    try:
        with torch.no_grad():
            return module(x)
    except USER_CODE_RAISES as exc:  # the user's forward: anything it raises is theirs, in one line
        raise UserError(
            f"model {name} fails on a zero batch of its stated input size {size} ({raised(exc)}); "
            "state its input_size (or fix its forward)"
        ) from None
    finally:
        module.train(training)


def check_output(module: nn.Module, name: str, config: ModelConfig) -> int:
    """One forward pass of a zero batch at ``config.input_size``: ``[N, classes]`` logits, or one line.
    Returns the class count the output has."""
    assert config.input_size is not None
    out = _forward_zeros(module, name, config.input_size)
    if not isinstance(out, torch.Tensor):
        raise UserError(
            f"model {name} returns a {type(out).__name__}, not a tensor of logits [N, classes] "
            "(wrap it so that forward returns the logits)"
        )
    if out.dim() != 2 or out.shape[0] != CHECKED_BATCH:
        raise UserError(
            f"model {name} returns shape {tuple(out.shape)} for {CHECKED_BATCH} images of size {config.input_size}, "
            f"not logits [{CHECKED_BATCH}, classes]"
        )
    width = int(out.shape[1])
    if config.num_classes is not None and width != config.num_classes:
        raise UserError(f"model {name} states num_classes={config.num_classes} but returns {width} logits per image")
    return width


def built_network(spec: ModelSpec, name: str, options: dict[str, Any]) -> nn.Module:
    """``name``'s network built (by the caller's random state) in eval mode; a plugin's (its layer is
    code robeval has not seen: a constructor or forward without timm's keywords) also run once on a
    zero batch.  What goes wrong is the one line every command prints alike."""
    from . import build_network

    try:
        net = build_network(name, **options).eval()
    except UserError:
        raise
    except USER_CODE_RAISES as exc:  # a plugin's layer code
        raise UserError(f"model {name} of {spec.package} does not build: {raised(exc)}") from None
    if is_plugin_network(spec):
        assert spec.config is not None
        check_output(net, name, spec.config)
    return net


def is_plugin_network(spec: ModelSpec) -> bool:
    """A network of robeval's families with a plugin's attention layer in it (facts as data, code unseen)."""
    return spec.package != "robeval" and spec.config is not None and spec.reference is None


def admit_model(
    name: str, options: dict[str, Any] | None = None, checkpoints: Sequence[OpenedCheckpoint] = ()
) -> ModelSpec:
    """A registered model (or a plugin's) as a run, train-demo or profile would use it: a plugin's network
    built and run once (seeded: the same check each time), each of ``checkpoints`` (read once:
    :func:`~.checkpoint.open_checkpoint`) fitting its network (:func:`~.checkpoint.check_fit`).  A model of
    the user's code is checked as it is built (robeval.models.given)."""
    spec = get_spec(name)
    options = dict(options or {})
    if is_plugin_network(spec):
        with torch.random.fork_rng():
            torch.manual_seed(0)
            built_network(spec, name, options)
    own = network_tensors(name, options) if checkpoints else {}
    for checkpoint in checkpoints:
        check_fit(own, checkpoint.state, name, f"checkpoint {checkpoint.path}")
    return spec

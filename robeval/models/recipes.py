"""The training recipe a checkpoint records: what two models must share before a difference between them
is one of attention kinds, and what the members of one model must share but their seed.

robeval's own files (``train-demo``, the zoo's scripts) keep it in their safetensors metadata (epochs,
lr, stochastic depth, seed; the zoo's older files name the script whose recipe they were trained with,
robeval.zoo.STOCHASTIC_DEPTH_BY_SCRIPT); a DeiT / timm training checkpoint keeps its command line as
``args``.  A file that records neither (a bare state dict, hub weights) has an unknown recipe: a
comparison says so rather than guess.  Read as :mod:`.checkpoint` reads any file: nothing executed
(imported when a file is read: comparing recipes needs no torch).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.defaults import DEMO_RECIPE
from ..core.printable import visible_controls

SEED = "seed"  # the one ingredient members of one model differ in
DATA = "data"
# robeval's metadata keys and a training script's args, each as the recipe names it
ROBEVAL_KEYS = {"epochs": "epochs", "lr": "lr", "stochastic_depth": "stochastic depth", "seed": SEED}
TRAINING_ARGS = {
    "epochs": "epochs", "lr": "lr", "sched": "schedule", "opt": "optimizer", "weight_decay": "weight decay",
    "batch_size": "batch size", "drop_path": "stochastic depth", "warmup_epochs": "warm-up epochs",
    "smoothing": "label smoothing", "mixup": "mixup", "cutmix": "cutmix", "input_size": "input size",
    "data_set": DATA, "seed": SEED,
}  # fmt: skip
DIGITS_DATA = "digits (training split)"


def recorded_recipe(path: str | Path | None, trust: bool = False) -> dict[str, str] | None:
    """The recipe ``path`` records (ingredient -> value as text), or None where it records none."""
    from .checkpoint import METADATA, check_checkpoint_file, checkpoint_format, checkpoint_object, safetensors_header

    if path is None or not Path(path).is_file():
        return None
    p = check_checkpoint_file(path)
    if checkpoint_format(p) == "safetensors":
        metadata = safetensors_header(p)[0].get(METADATA)
        return robeval_recipe(metadata) if isinstance(metadata, dict) else None
    obj = checkpoint_object(p, trust)
    args = obj.get("args") if isinstance(obj, Mapping) else None
    values = vars(args) if isinstance(args, argparse.Namespace) else args if isinstance(args, Mapping) else None
    if not values:
        return None
    found = {shown: _text(values[key]) for key, shown in TRAINING_ARGS.items() if key in values}
    return found or None


def robeval_recipe(metadata: Mapping[str, Any]) -> dict[str, str] | None:
    """The recipe in robeval's metadata; the zoo's files written before it named lr and stochastic depth
    were trained at the demo's lr by the scripts robeval.zoo names."""
    from ..zoo import STOCHASTIC_DEPTH_BY_SCRIPT

    if "epochs" not in metadata:
        return None
    script = str(metadata.get("trained_by", ""))
    defaults = {"lr": str(DEMO_RECIPE.lr), "stochastic_depth": str(STOCHASTIC_DEPTH_BY_SCRIPT.get(script, ""))}
    values = {**{k: v for k, v in defaults.items() if v}, **metadata}
    found = {shown: _text(values[key]) for key, shown in ROBEVAL_KEYS.items() if key in values}
    return {**found, DATA: DIGITS_DATA}


def _text(value: Any) -> str:
    """A recorded value as one line of text (a file's text only shows: robeval.core.printable), at most 200
    characters."""
    return visible_controls(str(value))[:200]


def recipe_differences(a: Mapping[str, str], b: Mapping[str, str], seed: bool = False) -> list[str]:
    """The ingredients two recipes give differently (not the seed unless ``seed``), as ``epochs 30 vs 300``;
    an ingredient one of them does not record is not compared."""
    keys = [k for k in a if k in b and (seed or k != SEED)]
    return [f"{k} {_number(a[k])} vs {_number(b[k])}" for k in keys if _number(a[k]) != _number(b[k])]


def _number(text: str) -> str:
    """A value as compared: ``0.001`` and ``1e-3`` are one lr."""
    try:
        return f"{float(text):g}"
    except ValueError:
        return text


def member_recipes(facts: Mapping[str, Any]) -> list[dict[str, str] | None]:
    """The recipe of each member of a model as run.json's model facts give it (None: unknown)."""
    members = facts.get("members") or [facts]
    return [member.get("recipe") if isinstance(member, Mapping) else None for member in members]


def recipe_text(recipe: Mapping[str, str] | None) -> str:
    """A recipe in words, its seed left out (``epochs 300, lr 0.001, ...``), or ``unknown``."""
    return ", ".join(f"{k} {v}" for k, v in recipe.items() if k != SEED) if recipe else "unknown"

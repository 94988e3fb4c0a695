"""The training recipe a checkpoint records: what two models must share before a difference between them
is one of attention kinds, and what the members of one model must share but their seed.

robeval's own files (``train-demo``, the zoo's scripts) keep it in their safetensors metadata (epochs,
lr, stochastic depth, seed; the zoo's older files name the script whose recipe they were trained with,
robeval.zoo.STOCHASTIC_DEPTH_BY_SCRIPT); a DeiT / timm training checkpoint keeps its command line as
``args``.  A file that records neither (a bare state dict, hub weights) has an unknown recipe: a
comparison says so rather than guess.  :mod:`.checkpoint` reads a file's records once and hands them here
(comparing recipes needs no torch).
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping
from typing import Any

from ..core.defaults import DEMO_RECIPE
from ..core.errors import UserError
from ..core.printable import visible_controls

SEED = "seed"  # the one ingredient members of one model differ in
DATA = "data"
NUMBER = (int, float)
# robeval's metadata keys (safetensors metadata: texts) and a training script's args, each as the recipe
# names it, with the type its value has
ROBEVAL_KEYS = {"epochs": "epochs", "lr": "lr", "stochastic_depth": "stochastic depth", "seed": SEED}
TRAINING_ARGS: dict[str, tuple[str, type | tuple[type, ...]]] = {
    "epochs": ("epochs", int), "lr": ("lr", NUMBER), "sched": ("schedule", str), "opt": ("optimizer", str),
    "weight_decay": ("weight decay", NUMBER), "batch_size": ("batch size", int),
    "drop_path": ("stochastic depth", NUMBER), "warmup_epochs": ("warm-up epochs", int),
    "smoothing": ("label smoothing", NUMBER), "mixup": ("mixup", NUMBER), "cutmix": ("cutmix", NUMBER),
    "input_size": ("input size", int), "data_set": (DATA, str), "seed": (SEED, int),
}  # fmt: skip
DIGITS_DATA = "digits (training split)"
MAX_TEXT = 200  # characters of a recorded value shown


def args_recipe(args: Mapping[str, Any]) -> dict[str, str] | None:
    """The recipe a training checkpoint's ``args`` record (its fields by name), or None where they record none."""
    found = {shown: _text(args[key], kind) for key, (shown, kind) in TRAINING_ARGS.items() if key in args}
    return found or None


def robeval_recipe(metadata: Mapping[str, Any]) -> dict[str, str] | None:
    """The recipe in robeval's metadata; the zoo's files written before it named lr and stochastic depth
    were trained at the demo's lr by the scripts robeval.zoo names."""
    from ..zoo import STOCHASTIC_DEPTH_BY_SCRIPT

    if "epochs" not in metadata:
        return None
    script = metadata.get("trained_by")
    depth = STOCHASTIC_DEPTH_BY_SCRIPT.get(script, "") if isinstance(script, str) else ""
    defaults = {"lr": str(DEMO_RECIPE.lr), "stochastic_depth": str(depth)}
    values = {**{k: v for k, v in defaults.items() if v}, **metadata}
    found = {shown: _text(values[key]) for key, shown in ROBEVAL_KEYS.items() if key in values}
    return {**found, DATA: DIGITS_DATA}


class _Bounded(reprlib.Repr):
    """A value's repr built within bounds (3 levels, a few items, short texts; the hostile values it
    keeps short: docs/hardening.md, section The rules, 3).  Only containers are entered; any other object
    shows as its type's name (its own repr could be as large)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxstring, self.maxother, self.maxlong = 3, 60, 60, 40
        self.maxlist = self.maxtuple = self.maxdict = self.maxset = self.maxfrozenset = 6

    def repr_int(self, x: int, level: int) -> str:
        return super().repr_int(x, level) if x.bit_length() <= 128 else f"<int of {x.bit_length()} bits>"

    def repr_instance(self, x: Any, level: int) -> str:
        for kind in (dict, list, tuple, set, frozenset, str, int):  # their subclasses (OrderedDict, torch.Size)
            if isinstance(x, kind):
                return getattr(self, f"repr_{kind.__name__}")(x, level)
        if x is None or isinstance(x, (float, complex)):
            return repr(x)
        if isinstance(x, (bytes, bytearray)):
            return repr(bytes(x[: self.maxstring])) + ("..." if len(x) > self.maxstring else "")
        return f"<{type(x).__name__}>"


BOUNDED = _Bounded()


def _text(value: Any, kind: type | tuple[type, ...] = str) -> str:
    """A recorded value as one line of at most :data:`MAX_TEXT` characters (a file's text only shows:
    robeval.core.printable), no larger text built on the way: a value of its field's type (``kind``) as it
    reads, any other through :data:`BOUNDED`."""
    plain = isinstance(value, str) and isinstance(value, kind)  # a number's repr is its text (up to 40 digits)
    return visible_controls(value[:MAX_TEXT] if plain else BOUNDED.repr(value))[:MAX_TEXT]


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


def member_recipes(facts: Any) -> list[dict[str, str] | None]:
    """The recipe of each member of a model as a stored run's model facts give it (None: unknown), each as
    :func:`stored_recipe` reads it."""
    facts = facts if isinstance(facts, Mapping) else {}
    members = facts.get("members") or [facts]
    members = members if isinstance(members, list) else [members]
    model = facts.get("name") if isinstance(facts.get("name"), str) else "a model"
    return [
        stored_recipe(member.get("recipe") if isinstance(member, Mapping) else None, f"member {i} of {model}")
        for i, member in enumerate(members, start=1)
    ]


def stored_recipe(recipe: Any, whose: str) -> dict[str, str] | None:
    """A recipe as a store holds it: None (unknown), or an object of ingredients to short values, as robeval
    writes one; anything else (a text, a list, a number: a store written by hand or another program) is one
    line, its value shown bounded."""
    fits = isinstance(recipe, Mapping) and all(
        isinstance(k, str)
        and len(k) <= MAX_TEXT
        and (isinstance(v, NUMBER) or isinstance(v, str) and len(v) <= MAX_TEXT)
        for k, v in recipe.items()
    )
    if recipe is not None and not fits:
        raise UserError(
            f"the store records the training recipe of {_text(whose)} as {_text(recipe, dict)}, not an object "
            "of ingredients to short texts or numbers as robeval writes one: a store changed by hand or by another "
            "program"
        )
    return {visible_controls(k): _text(v, (str, *NUMBER)) for k, v in recipe.items()} if recipe is not None else None


def recipe_text(recipe: Mapping[str, str] | None) -> str:
    """A recipe in words, its seed left out (``epochs 300, lr 0.001, ...``), or ``unknown``."""
    return ", ".join(f"{k} {v}" for k, v in recipe.items() if k != SEED) if recipe else "unknown"

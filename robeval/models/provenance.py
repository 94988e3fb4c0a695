"""Which code made a model, as a run records it (run.json's ``models.<name>.code``): for a model of the
user's code (``PATH.py:CALLABLE``, ``PKG.MODULE:CALLABLE``) the file it was read from and its SHA-256,
and every file of the user's own modules that loading it imported (``imports``: a helper beside it);
for a plugin's model or attention kind also the distribution that registers it and its version, and
for a kind the file of its attention layer.  robeval's own models have none (robeval's version is the
run's).  What a resume does with it: docs/hardening.md, section The rules, 6; a comparison:
docs/results.md (robeval.results.likeness).
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from .registry import ModelSpec

OWN = ("robeval", "(your code)")  # packages that are no installed distribution of their own


def distribution(package: str) -> dict[str, str]:
    """A plugin's distribution and its installed version (none for robeval's own and the user's code)."""
    if package in OWN:
        return {}
    try:
        return {"distribution": package, "version": metadata.version(package)}
    except metadata.PackageNotFoundError:
        return {"distribution": package}


def layer_record(spec: ModelSpec) -> dict[str, str] | None:
    """The file of the attention layer a plugin's kind builds ``spec`` with, and its SHA-256."""
    from .attention.kinds import layer_class
    from .registry import ATTENTION_KINDS

    if spec.attention is None or spec.attention not in ATTENTION_KINDS:
        return None
    kind = ATTENTION_KINDS[spec.attention]
    try:
        path = Path(inspect.getsourcefile(layer_class(kind)) or "")
    except TypeError:  # a class without a source file (built in C)
        return None
    if not path.is_file():
        return None
    return {"path": str(path.resolve()), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def model_code(spec: ModelSpec) -> dict[str, Any] | None:
    """The code of ``spec`` as a run records it (the module docstring), or None for robeval's own."""
    from .user_code import code_record  # (torch: only a run that builds the model records its code)

    if spec.reference is not None:
        record = code_record(spec.reference)
        return None if record is None else {**distribution(spec.package), **record}
    if spec.package in OWN:
        return None
    return {**distribution(spec.package), **(layer_record(spec) or {})}


def changed_file(recorded: Mapping[str, Any], now: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """The first file of a model's code that differs (its path, SHA-256 recorded and now): the named file,
    else a file of the user's that it imported (a run recorded before imports were kept compares its file)."""
    if recorded.get("sha256") != now.get("sha256"):
        where = now.get("path") or recorded.get("path") or now.get("distribution", "its code")
        return str(where), str(recorded.get("sha256")), str(now.get("sha256"))
    before, after = recorded.get("imports"), dict(now.get("imports") or {})
    if before is None:
        return None
    for path in sorted(set(before) | set(after)):
        if before.get(path) != after.get(path):
            return path, str(before.get(path) or "(not imported)"), str(after.get(path) or "(not imported)")
    return None


def same_code(recorded: Mapping[str, Any], now: Mapping[str, Any]) -> bool:
    """Whether two records of a model's code (:func:`model_code`) are of the same code."""
    return changed_file(recorded, now) is None and recorded.get("version") == now.get("version")


def code_change(name: str, recorded: Mapping[str, Any] | None, now: Mapping[str, Any] | None) -> str | None:
    """How model ``name``'s code changed since ``recorded`` (one phrase naming the file), or None."""
    if not recorded or now is None or same_code(recorded, now):
        return None
    where, before, after = changed_file(recorded, now) or (now.get("distribution", "its code"), "", "")
    version = (
        f", {now.get('distribution')} {recorded.get('version')} -> {now.get('version')}"
        if recorded.get("version") != now.get("version")
        else ""
    )
    sha = f": SHA-256 {before[:12]} -> {after[:12]}" if before != after else ""
    return f"the code of model {name} changed since the run started ({where}{sha}{version})"


def checkpoint_change(recorded: Mapping[str, Any] | None, now: Mapping[str, Mapping[str, str]]) -> str | None:
    """How the checkpoints a run loads (:meth:`~robeval.evaluation.plan.RunPlan.loaded_checkpoints`) differ
    from those it started with (one phrase naming the file), or None (a run that recorded none: None)."""
    for who, file in now.items():
        before = dict((recorded or {}).get(who) or {})
        if before and before.get("sha256") != file["sha256"]:
            return (
                f"the checkpoint of {who} changed since the run started ({file['path']}: SHA-256 "
                f"{str(before.get('sha256'))[:12]} -> {file['sha256'][:12]})"
            )
    return None

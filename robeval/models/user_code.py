"""Models from the user's own code: ``--model PATH.py:CALLABLE`` and ``--model PKG.MODULE:CALLABLE``
(:mod:`robeval.references`), and the objects of plugins' ``robeval.models`` entry points.

What the callable returns, and that importing the code is the user's explicit choice while its
checkpoints stay ``weights_only``: docs/models.md, section Your own model.  Every way this can go wrong
is one line.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import importlib
import importlib.machinery
import importlib.util
import os
import site
import sys
import sysconfig
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from torch import nn

from ..core.errors import USER_CODE_RAISES, UserError, raised
from ..model_config import ModelConfig
from ..options import split_source
from ..references import check_reference_file, is_file_reference, is_reference, parts
from .registry import ModelSpec
from .weights import Weights
from .wrapper import config_of, set_config

FAMILY = "user code"
_FILES: dict[Path, ModuleType] = {}  # a .py file imported once per process
_IMPORTED: dict[str, set[Path]] = {}  # a reference's code (:func:`_code_key`) -> the user's files its loading imported


@functools.cache
def _installed_roots() -> tuple[Path, ...]:
    """Where installed code lives: the standard library, the environment's and the user's site-packages,
    robeval itself."""
    paths = sysconfig.get_paths()
    found = [paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths]
    found += [*getattr(site, "getsitepackages", list)(), site.getusersitepackages()]
    return tuple(Path(p).resolve() for p in [*found, str(Path(__file__).parents[1])])


def own_file(module: ModuleType | None) -> Path | None:
    """The file of ``module`` when it is the user's own code (outside :func:`_installed_roots`), else None."""
    file = getattr(module, "__file__", None)
    if not isinstance(file, str):
        return None
    path = Path(file).resolve()
    if not path.is_file() or any(path.is_relative_to(root) for root in _installed_roots()):
        return None
    return path


def _code_key(reference: str) -> str:
    """A reference's code as :data:`_IMPORTED` keys it: its file (however it is spelt), or its module."""
    target, _ = parts(reference)
    return str(Path(target).resolve()) if is_file_reference(reference) else target


@contextmanager
def _watching_imports(reference: str) -> Iterator[None]:
    """Notes, for ``reference``, the user's own files among the modules first imported while the block
    runs (its import, its callable's call): what actually got loaded with its code, such as a helper
    module beside the file, found as Python imported it, not by reading the code."""
    before = set(sys.modules)
    try:
        yield
    finally:
        found = {own_file(sys.modules.get(name)) for name in set(sys.modules) - before}
        _IMPORTED.setdefault(_code_key(reference), set()).update(path for path in found if path is not None)


def import_file(path: Path) -> ModuleType:
    """``path`` imported under a name of its own (its folder first on ``sys.path``, as a script's is)."""
    resolved = path.resolve()
    if resolved in _FILES:
        return _FILES[resolved]
    name = f"robeval_user_{resolved.stem}_{hashlib.sha256(str(resolved).encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise UserError(f"{path} cannot be imported as Python code")
    module = importlib.util.module_from_spec(spec)
    if str(resolved.parent) not in sys.path:
        sys.path.insert(0, str(resolved.parent))  # its own imports of files beside it
    sys.modules[name] = module  # classes defined in it stay importable (copying, pickling)
    try:
        spec.loader.exec_module(module)
    except USER_CODE_RAISES as exc:  # the user's code: whatever it raises is theirs to see, in one line
        del sys.modules[name]
        raise UserError(f"{path} raised {raised(exc)} on import") from None
    _FILES[resolved] = module
    return module


def import_target(target: str, reference: str) -> ModuleType:
    """The file or module a reference names (the current folder importable, as uvicorn makes it)."""
    if is_file_reference(reference):
        check_reference_file(reference)
        with _watching_imports(reference):
            return import_file(Path(target))
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        with _watching_imports(reference):
            return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        raise UserError(f"cannot import {target} (from --model {reference}): {raised(exc)}") from None
    except USER_CODE_RAISES as exc:  # the user's code raised while importing
        raise UserError(f"{target} raised {raised(exc)} on import (from --model {reference})") from None


def resolve_target(reference: str) -> Any:
    """The object a reference names: its file or module imported, then the (dotted) attribute."""
    target, attribute = parts(reference)
    obj: Any = import_target(target, reference)
    for name in attribute.split("."):
        if not hasattr(obj, name):
            raise UserError(f"{target} has no attribute {attribute!r} (from --model {reference})")
        obj = getattr(obj, name)
    return obj


def build_from(reference: str, target: Any) -> nn.Module:
    """Call ``target`` (or copy it, if it is a module) and give the module its stated config as its
    ``pretrained_cfg`` (a :class:`ModelConfig` returned alongside wins over the module's own)."""
    if isinstance(target, nn.Module):
        module, stated = copy.deepcopy(target), None
    elif callable(target):
        try:
            with _watching_imports(reference):
                result = target()
        except USER_CODE_RAISES as exc:  # the user's code
            raise UserError(f"{reference}() raised {raised(exc)}") from None
        module, stated = result if isinstance(result, tuple) and len(result) == 2 else (result, None)
        if not isinstance(module, nn.Module):
            raise UserError(
                f"{reference}() returned a {type(result).__name__}, not a torch.nn.Module "
                "(or a (module, robeval.ModelConfig) pair)"
            )
    else:
        raise UserError(f"{reference} is a {type(target).__name__}, not a callable that returns an nn.Module")
    config = ModelConfig.from_cfg(config_of(module)).updated(ModelConfig.from_cfg(stated))
    return set_config(module, {**config_of(module), **config.as_cfg()})


def code_spec(name: str, reference: str, target_of, package: str, description: str) -> ModelSpec:
    """The spec of a model built by user code: no facts as data (they come with the built module)."""
    return ModelSpec(
        name,
        FAMILY,
        lambda: build_from(reference, target_of()),
        weights=Weights("code", reference),
        description=description,
        package=package,
        reference=reference,
    )


def describe(target: Any) -> str:
    doc = (getattr(target, "__doc__", None) or "").strip()
    return doc.splitlines()[0] if doc and not isinstance(target, nn.Module) else ""


def reference_spec(name: str) -> ModelSpec | None:
    """The spec of a name that is a reference to the user's code (an extension in :mod:`.catalog`), else None."""
    if not is_reference(name):
        return None
    target = resolve_target(name)  # imported now: a wrong reference is one line before any work
    return code_spec(name, name, lambda: target, "(your code)", describe(target))


def source_file(reference: str) -> Path | None:
    """The file a reference's code is read from, found as its import would find it (a ``.py`` path from
    the current folder; a module through the current folder, then ``sys.path``) without running
    anything: no package's ``__init__`` is imported to find its module.  None when there is none."""
    target, _ = parts(reference)
    if is_file_reference(reference):
        path = Path(target)
        return path.resolve() if path.is_file() else None
    locations: list[str] | None = [os.getcwd(), *sys.path]
    found = None
    names = target.split(".")
    for depth in range(len(names)):
        if locations is None:
            return None
        found = importlib.machinery.PathFinder.find_spec(".".join(names[: depth + 1]), locations)
        if found is None:
            return None
        locations = list(found.submodule_search_locations or []) or None
    origin = found.origin if found is not None else None
    return Path(origin).resolve() if origin and Path(origin).is_file() else None


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def code_record(reference: str) -> dict[str, Any] | None:
    """The file a model's code was read from and its SHA-256, and (``imports``) every file of the user's
    own modules that loading it in this process imported, each with its SHA-256 (the run keeps them in its
    models' facts); None when it has no file."""
    path = source_file(reference)
    if path is None:
        return None
    imported = sorted(f for f in _IMPORTED.get(_code_key(reference), ()) if f != path and f.is_file())
    return {"path": str(path), "sha256": _sha256(path), "imports": {str(f): _sha256(f) for f in imported}}


def _same_code(reference: str) -> tuple[str, str]:
    """What a reference imports, spelled one way: its file (``./mine.py`` and ``/abs/mine.py`` are one) or
    module (:func:`_code_key`), then the callable."""
    return _code_key(reference), parts(reference)[1]


def check_stored_code(config: Mapping[str, Any], named: Iterable[str] = ()) -> None:
    """Before models of a stored run are built again (``robeval examples``, the report's gallery, ``check
    --run-missing``): a model of the user's code is imported only when this command line names its
    reference again (``named``: ``REFERENCE`` of ``--model REFERENCE[=NAME]``), else one line naming the
    code and how to allow it; why a store's word is not enough: docs/hardening.md, section The rules, 1."""
    allowed = {_same_code(r) for r in named if is_reference(r)}
    references = dict(config.get("references") or {})
    for model in config.get("models", []):
        reference = references.get(model, model)
        if is_reference(reference) and _same_code(reference) not in allowed:
            label = "" if reference == model else f"={model}"
            raise UserError(
                f"model {model} of the run is built by the code {reference}, which reading a stored run never "
                f"imports (a store names code as text anyone can write); to build it, name that code on this "
                f"command line: --model {reference}{label}"
            )
    source = split_source(config.get("source_model"))
    if source is not None and is_reference(source[0]):
        raise UserError(
            f"the run's transfer source model is built by the code {source[0]}, which is not built again from a "
            "stored run"
        )


def module_spec(rest: str) -> ModelSpec:
    raise UserError(
        f"module:{rest} names an nn.Module given to robeval from Python in another process: its stored runs "
        "can be read, not run again by name"
    )

"""The layout holds: docs/layout.md names every module of robeval/ once and nothing that does not exist;
no import cycle in robeval/ (imports inside functions count, ``import_module("...")``
with a literal name counts as an import, and importing a.b.c runs a/__init__ and a/b/__init__ first),
and no module imports from a layer above its own (../shared/ARCHITECTURE.md's order); every function is
short enough to hold in mind."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "robeval"
LAYOUT_PAGE = PACKAGE.parent / "docs" / "layout.md"

# ARCHITECTURE.md's layers, top to bottom: a module may import its own layer and the layers below.
LAYERS = [
    ("robeval.cli", "robeval.__main__"),
    ("robeval.api", "robeval.results_api", "robeval"),
    ("robeval.reproduce",),
    ("robeval.report",),
    ("robeval.results",),
    ("robeval.evaluation",),
    ("robeval.store",),
    ("robeval.robustbench_ext",),
    ("robeval.shifts",),
    ("robeval.attacks",),
    ("robeval.models",),
    ("robeval.data",),
    ("robeval.attack_settings", "robeval.options", "robeval.zoo", "robeval.model_config", "robeval.references"),
    ("robeval.core",),  # the ground floor: every layer may import it, it imports none of them
]
MAX_BODY_LINES = 40


def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


IMPORTING_CALLS = ("import_module", "__import__")  # importlib's: a literal first argument is an import


def _package(name: str, path: Path) -> list[str]:
    """The package a relative import in module ``name`` is relative to."""
    return name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]


def _relative(name: str, path: Path, dotted: str) -> str:
    """``.x`` / ``..x`` (importlib's relative names, with the package the call gives) made absolute."""
    level = len(dotted) - len(dotted.lstrip("."))
    base = _package(name, path)
    rest = dotted[level:]
    return ".".join(base[: len(base) - level + 1] + ([rest] if rest else []))


def _called_import(node: ast.Call, name: str, path: Path) -> list[str]:
    """The module an ``import_module("...")`` call names, when its name is a literal string."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if called not in IMPORTING_CALLS or not node.args or not isinstance(node.args[0], ast.Constant):
        return []
    target = node.args[0].value
    if not isinstance(target, str):
        return []
    return [_relative(name, path, target) if target.startswith(".") else target]


def _targets(node: ast.AST, name: str, path: Path) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        base = _package(name, path)
        prefix = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else [])) \
            if node.level else (node.module or "")
        return [prefix] + [f"{prefix}.{a.name}" for a in node.names]
    if isinstance(node, ast.Call):
        return _called_import(node, name, path)
    return []


def _imports_nothing(path: Path) -> bool:
    """A package whose ``__init__`` imports nothing: running it first (a docstring) ties no layer to another."""
    return path.name == "__init__.py" and not any(
        isinstance(node, (ast.Import, ast.ImportFrom)) for node in ast.walk(ast.parse(path.read_text())))


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every robeval module ``name`` imports (anywhere in it, ``import_module`` calls included), with the
    packages that run first (but those whose ``__init__`` imports nothing)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets = _targets(node, name, path)
        if not targets:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            parts = target.split(".") if target else []
            for k in range(1, len(parts) + 1):
                ancestor = ".".join(parts[:k])
                if k < len(parts) and ancestor in known and _imports_nothing(known[ancestor]):
                    continue
                if ancestor in known and ancestor != name and not name.startswith(ancestor + "."):
                    found.add(ancestor)
    return found


def layer_of(name: str) -> int:
    best = None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if name == prefix or (prefix != "robeval" and name.startswith(prefix + ".")):
                best = index
    assert best is not None, f"{name} belongs to no layer of ARCHITECTURE.md"
    return best


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def test_import_module_calls_count_as_imports(tmp_path):
    """``import_module("robeval.api")`` inside a function is an edge of the graph, as ``import`` is."""
    fake = tmp_path / "robeval" / "robustbench_ext" / "__init__.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("def f():\n    from importlib import import_module\n    return import_module('robeval.api').x\n"
                    "def g():\n    import importlib\n    return importlib.import_module('..models', __name__)\n")
    known = {"robeval.api": PACKAGE / "api.py", "robeval.models": PACKAGE / "models" / "__init__.py",
             "robeval": PACKAGE / "__init__.py", "robeval.robustbench_ext": fake}
    assert imports_of("robeval.robustbench_ext", fake, known) == {"robeval.api", "robeval.models"}


def test_no_module_imports_from_a_layer_above_its_own():
    upward = sorted(f"{m} -> {t}" for m, targets in graph().items() for t in targets if layer_of(t) < layer_of(m))
    assert upward == []


def test_no_import_cycle():
    edges = graph()
    state: dict[str, int] = {}
    cycles: list[str] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(trail[trail.index(nxt):] + [node, nxt]) if nxt in trail else f"{node} -> {nxt}")
            elif nxt not in state:
                visit(nxt, trail + [node])
        state[node] = 2

    for start in sorted(edges):
        if start not in state:
            visit(start, [])
    assert cycles == []


def _body_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    body = fn.body[1:] if fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant) \
        else fn.body
    return (fn.end_lineno - body[0].lineno + 1) if body else 0


@pytest.mark.parametrize("name", sorted(modules()))
def test_every_function_is_under_forty_body_lines(name):
    tree = ast.parse(modules()[name].read_text())
    long = [f"{fn.name} ({_body_lines(fn)})" for fn in ast.walk(tree)
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and _body_lines(fn) > MAX_BODY_LINES]
    assert long == []


def _named_paths() -> list[str]:
    """Every path docs/layout.md names in backticks (``robeval/...``, ``scripts/...``, ``docs/...``, ...)."""
    return re.findall(r"`((?:robeval|scripts|docs|benchmarks|tests)/[^`*]*)`", LAYOUT_PAGE.read_text())


def test_layout_page_names_every_module_once():
    named = Counter(_named_paths())
    files = sorted(str(path.relative_to(PACKAGE.parent)) for path in PACKAGE.rglob("*.py"))
    assert [f for f in files if named[f] != 1] == []


def test_layout_page_names_nothing_that_does_not_exist():
    assert [p for p in _named_paths() if not (PACKAGE.parent / p).exists()] == []

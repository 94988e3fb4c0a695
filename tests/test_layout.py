"""The layout holds: no import cycle in robeval/ (imports inside functions count, and importing a.b.c
runs a/__init__ and a/b/__init__ first), and no module imports from a layer above its own
(../shared/ARCHITECTURE.md's order); every function is short enough to hold in mind."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "robeval"

# ARCHITECTURE.md's layers, top to bottom: a module may import its own layer and the layers below.
LAYERS = [
    ("robeval.cli", "robeval.__main__"),
    ("robeval.api", "robeval"),
    ("robeval.reproduce",),
    ("robeval.report",),
    ("robeval.results",),
    ("robeval.evaluation",),
    ("robeval.robustbench_ext",),
    ("robeval.shifts",),
    ("robeval.attacks",),
    ("robeval.models",),
    ("robeval.data",),
    ("robeval.errors", "robeval.eps", "robeval.seeds", "robeval.norms", "robeval.threads", "robeval.defaults",
     "robeval.settings", "robeval.machine", "robeval.registry", "robeval.options", "robeval.precision", "robeval.zoo"),
]
MAX_BODY_LINES = 40


def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every robeval module ``name`` imports (anywhere in it), with the packages that run first."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
            prefix = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else (node.module or "")
            targets = [prefix] + [f"{prefix}.{a.name}" for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            parts = target.split(".") if target else []
            for k in range(1, len(parts) + 1):
                ancestor = ".".join(parts[:k])
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

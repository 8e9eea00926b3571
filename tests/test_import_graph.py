"""The package's layers import downwards only, with no circles (issue 15): data/catalog -> workload ->
estimators -> planner/advisor -> interfaces. Imports inside functions count (they are still a
dependency); imports under `if TYPE_CHECKING:` do not (they never run)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = (("mlrig.catalog", 0), ("mlrig.quant", 0), ("mlrig.errors", 0), ("mlrig.workload", 1),
          ("mlrig.results", 1), ("mlrig.estimators", 2), ("mlrig.planner", 3), ("mlrig.advisor", 3),
          ("mlrig.validation", 3), ("mlrig.commands", 4), ("mlrig.web", 4), ("mlrig.cli", 4))


def _modules() -> dict[str, Path]:
    out = {}
    for p in (ROOT / "mlrig").rglob("*.py"):
        out[".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")] = p
    return out


def _runtime_imports(tree: ast.AST) -> list[str]:
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.ImportFrom) and child.module and child.module.startswith("mlrig"):
                found.extend([f"{child.module}.{a.name}" for a in child.names] + [child.module])
            elif isinstance(child, ast.Import):
                found.extend(a.name for a in child.names if a.name.startswith("mlrig"))
            visit(child)

    visit(tree)
    return found


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    g: dict[str, set[str]] = defaultdict(set)
    for name, path in mods.items():
        for target in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if target in mods and target != name:
                g[name].add(target)
    # "from mlrig.x import y" names both mlrig.x and, when it is a module, mlrig.x.y: keep the deepest
    for name, targets in g.items():
        g[name] = {t for t in targets if not any(o.startswith(t + ".") for o in targets)}
    return g


def _layer(module: str) -> int | None:
    return next((n for prefix, n in LAYERS if module == prefix or module.startswith(prefix + ".")), None)


def test_no_import_circles() -> None:
    g = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def strong(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in g.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in list(g):
        if v not in index:
            strong(v)
    assert cycles == []


def test_layers_import_downwards() -> None:
    upward = [(a, b) for a, targets in _graph().items() for b in targets
              if (la := _layer(a)) is not None and (lb := _layer(b)) is not None and lb > la]
    assert upward == []

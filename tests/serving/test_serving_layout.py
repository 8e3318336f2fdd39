"""The rooms of serving/: a small root, short modules (or a stated reason), and rooms that import each other
one way only, so a reader finds a concern in one package and an import order never matters."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SERVING = REPO / "serving"
ROOT_FILES_MAX = 4  # __init__.py, pipeline.py, stages.py and at most one more
LINES_MAX = 400
REASON = "Long because"


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(SERVING.rglob("*.py")):
        name = ".".join(path.relative_to(REPO).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def room(module: str) -> str:
    """serving.core.x -> serving.core; the api's ways in are rooms of their own (serving.api.http, .mcp)."""
    parts = module.split(".")
    if len(parts) < 2:
        return module  # the serving package itself
    return ".".join(parts[:3]) if parts[1] == "api" and len(parts) > 3 else ".".join(parts[:2])


def import_time_edges(known: dict[str, Path]) -> dict[str, set[str]]:
    """Room -> rooms it imports when loaded: module-level imports only (a TYPE_CHECKING block or an import inside
    a function, e.g. a registry loading its plug-ins, runs later and cannot make an import cycle)."""
    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            for target in targets:
                if target in known and room(target) != room(name):
                    edges.setdefault(room(name), set()).add(room(target))
    return edges


def find_cycle(edges: dict[str, set[str]]) -> list[str]:
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(node: str, trail: list[str]) -> list[str]:
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*trail[trail.index(nxt):], nxt] if nxt in trail else [node, nxt]
            if nxt not in state and (found := visit(nxt, [*trail, nxt])):
                return found
        state[node] = 2
        return []

    for start in sorted(edges):
        if start not in state and (found := visit(start, [start])):
            return found
    return []


def test_root_holds_few_files() -> None:
    root = sorted(p.name for p in SERVING.glob("*.py"))
    assert len(root) <= ROOT_FILES_MAX, f"serving/ root holds {root}: put a module in its room"


def test_long_modules_say_why() -> None:
    long = []
    for name, path in modules().items():
        text = path.read_text(encoding="utf-8")
        doc = ast.get_docstring(ast.parse(text)) or ""
        if len(text.splitlines()) > LINES_MAX and not any(line.strip().startswith(REASON) for line in doc.splitlines()):
            long.append(name)
    assert long == [], f"over {LINES_MAX} lines without a '{REASON} ...' line in the docstring: {long}"


def test_rooms_import_one_way() -> None:
    edges = import_time_edges(modules())
    assert "serving.core" in edges or "serving.retrievers" in edges  # the scan sees the imports at all
    assert find_cycle(edges) == []


def test_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}}) == []


def test_every_module_imports_in_sorted_order() -> None:
    """One fresh interpreter imports every serving module in sorted order: a cycle that only bites in some
    order, or a module left behind by a move, fails here."""
    names = sorted(modules())
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    done = subprocess.run([sys.executable, "-c", code, *names], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]


PRIVATE_SCAN_SKIPS = ("serving.api",)  # the ways in are checked with their own rooms' tests


def private_reaches(known: dict[str, Path]) -> list[str]:
    """`module:line expression` for every `x._name` whose `x` is not `self`, `cls` or `super()`: one object
    calling another's private method or reading its private state."""
    found = []
    for name, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")):
                continue
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
                continue
            found.append(f"{name}:{node.lineno} {ast.unparse(node)}")
    return found


def test_no_room_reaches_into_another_objects_private_parts(tmp_path: Path) -> None:
    known = {n: p for n, p in modules().items() if not n.startswith(PRIVATE_SCAN_SKIPS)}
    assert private_reaches(known) == []
    probe = tmp_path / "probe.py"
    probe.write_text("def answer(core):\n    return core._scope(self._own)\n", encoding="utf-8")
    assert private_reaches({"probe": probe}) == ["probe:2 core._scope"]  # the scan sees a reach

"""The ground floor: semantica/ holds the contract both floors share (types, config, the on-disk layout and its
stores, the runtimes) and nothing that only one side runs; pipelines/ and serving/ meet only there. A feature
with behaviour goes to its room upstairs, so a new module at the floor's root or a new room is a visible decision."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FLOOR = REPO / "semantica"
ROOT_MODULES = {"__init__", "api", "daemon_protocol", "encoder_identity", "errors", "feature_schema", "hits", "layout",
                "schema", "snapshot"}
ROOMS = {"config", "languages", "ondisk", "runtime", "stores"}
STORES = {"exact", "history", "index_kinds", "localizer"}
UPPER_FLOORS = ("pipelines", "serving", "jobs", "lab")
PRODUCT = ("semantica", "pipelines", "serving", "jobs")
# In-function imports of product modules the floor keeps, each for a heavy dependency it defers (never for a loop).
DEFERRED = {("semantica/stores/token_vectors.py", "semantica.stores.vectors"): "vectors imports faiss, deferred here",
            ("semantica/stores/token_vectors.py", "semantica.stores.pq_subspaces"): "it imports faiss, deferred here"}


def packages(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if p.is_dir() and any(p.rglob("*.py"))}


def imports(path: Path, in_functions_only: bool = False) -> list[str]:
    """Modules an import statement names (anywhere, or only inside a function body)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    roots = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))] \
        if in_functions_only else [tree]
    found = set()
    for root in roots:
        for node in ast.walk(root):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module)
    return sorted(found)


def offenders(package: str, banned: tuple[str, ...]) -> dict[str, list[str]]:
    out = {}
    for path in sorted((REPO / package).rglob("*.py")):
        if bad := [m for m in imports(path) if m.split(".")[0] in banned]:
            out[str(path.relative_to(REPO))] = bad
    return out


def test_the_floor_root_holds_only_the_shared_contract() -> None:
    root = {p.stem for p in FLOOR.glob("*.py")}
    assert "api" in root  # the scan sees the floor
    assert root - ROOT_MODULES == set(), "a module at semantica/'s root: put it in a room (stores/, runtime/, ...)"


def test_the_floor_has_its_rooms_only() -> None:
    assert packages(FLOOR) - ROOMS == set(), "a new room on the ground floor: features with behaviour go upstairs"
    assert packages(FLOOR / "stores") - STORES == set()


def test_the_floor_imports_no_upper_floor() -> None:
    assert offenders("semantica", UPPER_FLOORS) == {}


def test_pipelines_and_serving_do_not_import_each_other() -> None:
    """Indexing and the query side meet on the floor: neither imports the other, even inside a function."""
    assert offenders("pipelines", ("serving", "jobs", "lab")) == {}
    assert offenders("serving", ("pipelines", "jobs", "lab")) == {}


def test_no_floor_loop_is_held_apart_by_an_in_function_import() -> None:
    found = {(str(path.relative_to(REPO)), module) for path in sorted(FLOOR.rglob("*.py"))
             for module in imports(path, in_functions_only=True) if module.split(".")[0] in PRODUCT}
    assert found - set(DEFERRED) == set(), "import it at module level (and break the loop it hits by a move)"


def test_the_scan_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import numpy\n\n\ndef f():\n    from serving.pipeline import SearchPipeline\n    return 1\n")
    assert imports(module) == ["numpy", "serving.pipeline"]
    assert imports(module, in_functions_only=True) == ["serving.pipeline"]


def test_every_floor_module_imports_in_sorted_order() -> None:
    """One fresh interpreter imports every floor module in sorted order: a cycle only some order meets fails."""
    names = sorted(".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
                   for p in FLOOR.rglob("*.py"))
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    done = subprocess.run([sys.executable, "-c", code, *names], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]

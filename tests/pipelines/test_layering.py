"""Indexing and the shared contract never import the query side: pipelines/ and semantica/ hold no import of
serving/ (module level or inside a function), so serving depends on them and not the other way round."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LOWER_PACKAGES = ("pipelines", "semantica")
UPPER_PACKAGE = "serving"


def imports_of(path: Path) -> set[str]:
    """Every module an import statement in `path` names, wherever the statement sits."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_pipelines_and_semantica_do_not_import_serving() -> None:
    scanned, offenders = 0, {}
    for package in LOWER_PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            scanned += 1
            upward = sorted(m for m in imports_of(path) if m == UPPER_PACKAGE or m.startswith(UPPER_PACKAGE + "."))
            if upward:
                offenders[str(path.relative_to(REPO))] = upward
    assert scanned > 50  # the scan saw both packages
    assert offenders == {}


def test_the_scan_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from serving.localizer.stage import LearnedStage\n    return LearnedStage\n")
    assert imports_of(module) == {"serving.localizer.stage"}

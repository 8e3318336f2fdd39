"""The wall between the product and the lab: the wheel ships `semantica`, `pipelines`, `serving` and `jobs`; `lab/`
(the team's studies) imports the product and is never imported by it, nor installed."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from setuptools import find_namespace_packages

REPO_ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("semantica", "pipelines", "serving", "jobs")
LAB = "lab"


def lab_imports(path: Path) -> list[str]:
    """Every `lab` module a file imports: import statements anywhere (in functions too) and import_module strings."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            found.append(str(node.args[0].value))
    return [name for name in found if name == LAB or name.startswith(LAB + ".")]


def test_no_product_module_imports_the_lab() -> None:
    files = [path for package in PRODUCT for path in sorted((REPO_ROOT / package).rglob("*.py"))]
    assert len(files) > 100  # the scan saw the product
    offenders = {str(path.relative_to(REPO_ROOT)): names for path in files if (names := lab_imports(path))}
    assert offenders == {}


def test_the_scan_sees_every_kind_of_import(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("import lab.bench.fast\nfrom lab import eval\n\n\ndef f():\n    from lab.train import transport\n"
                      "    importlib.import_module('lab.x')\n\nimport labels\nfrom jobs import lab\n")
    assert lab_imports(source) == ["lab.bench.fast", "lab", "lab.train", "lab.x"]


def wheel_packages() -> list[str]:
    """The packages the wheel installs: setuptools' find (namespaces on, as pyproject's `packages.find` is)."""
    found = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    return find_namespace_packages(str(REPO_ROOT), include=found.get("include", ["*"]), exclude=found.get("exclude", []))


def test_the_wheel_holds_the_product_and_no_lab_module() -> None:
    packages = wheel_packages()
    assert set(PRODUCT) <= set(packages) and "jobs.commands" in packages
    assert [p for p in packages if p == LAB or p.startswith(LAB + ".") or p.split(".")[0] not in PRODUCT] == []
    assert (REPO_ROOT / LAB / "bench").is_dir()  # there is a lab to leave out


def test_the_lab_tests_mirror_the_lab() -> None:
    """tests/lab/<folder> tests lab/<folder>: a test folder without its lab folder is a misplaced test."""
    tests_lab = REPO_ROOT / "tests" / LAB
    folders = [p.relative_to(tests_lab) for p in tests_lab.rglob("*") if p.is_dir() and p.name != "__pycache__"]
    assert folders and [str(f) for f in folders if not (REPO_ROOT / LAB / f).is_dir()] == []


ENTRY_POINTS_MAX = 5  # `python -m` modules in the wheel: the CLI, the demo, the ONNX export, the benchmarks


def entry_points() -> list[str]:
    """Product modules runnable with `python -m`: a `__main__` guard or a package's `__main__.py`."""
    found = []
    for package in PRODUCT:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            if 'if __name__ == "__main__"' in path.read_text(encoding="utf-8"):
                found.append(str(path.relative_to(REPO_ROOT)))
    return found


def test_the_wheel_has_few_python_m_entry_points() -> None:
    """A study grows as one more `python -m` script; the product's benchmarks share `python -m jobs.bench NAME`."""
    found = entry_points()
    assert "jobs/cli.py" in found and len(found) <= ENTRY_POINTS_MAX, found

"""The Python family: import bindings (at any scope) resolved to modules by dotted name, relative imports
included. Calls, references and types are resolved by `pipelines.parse.resolution` and the `python_*`
modules (`typed_calls`)."""

from __future__ import annotations

import posixpath

from pipelines.parse import python as python_extract
from pipelines.parse.facts import RawImport
from pipelines.parse.families.base import Family, RepoFiles
from pipelines.parse.languages import LanguageSpec
from semantica.schema import module_of

NAME = "python"
SPEC = LanguageSpec(
    family=NAME,
    functions=frozenset({"function_definition"}),
    classes=frozenset({"class_definition"}),
    descend=frozenset({
        "if_statement", "elif_clause", "else_clause", "try_statement", "except_clause",
        "except_group_clause", "finally_clause", "with_statement", "for_statement",
        "while_statement", "block",
    }),
    imports=frozenset({"import_statement", "import_from_statement"}),
    call_query="(call) @call",
    import_scopes=frozenset({
        "function_definition", "class_definition", "decorated_definition", "block", "if_statement",
        "try_statement", "with_statement", "else_clause", "except_clause", "finally_clause", "elif_clause",
    }),
    typed_calls=True,
)
_MODULES = "python:modules"


def module_index(repo: RepoFiles) -> dict[str, str]:
    """Dotted module name -> path, by repo-relative name and by name under its source root (the directory
    above the topmost package, e.g. `src/`); built once per resolution."""
    if _MODULES in repo.memo:
        return repo.memo[_MODULES]
    python = sorted(p for p in repo.paths if repo.family_of(p) == NAME)
    packages = {posixpath.dirname(p) for p in python if posixpath.basename(p) == "__init__.py"}
    index: dict[str, str] = {}
    for path in python:
        index.setdefault(module_of(path), path)
    for path in python:
        root = posixpath.dirname(path)
        while root and root in packages:
            root = posixpath.dirname(root)
        rel = path[len(root) + 1 :] if root else path
        index.setdefault(module_of(rel), path)
    repo.memo[_MODULES] = index
    return index


def absolute(path: str, module: str) -> str:
    """Absolute dotted module for `module` as written in `path` (relative imports resolved); "" when it
    climbs above the repository."""
    if not module.startswith("."):
        return module
    level = len(module) - len(module.lstrip("."))
    parts = [p for p in posixpath.dirname(path).split("/") if p]
    if level - 1 > len(parts):
        return ""
    base = parts[: len(parts) - (level - 1)]
    rest = [p for p in module.lstrip(".").split(".") if p]
    return ".".join(base + rest)


def resolve_import(repo: RepoFiles, path: str, imp: RawImport) -> list[str]:
    """`from a.b import c`: the module a/b/c.py when c is a submodule, else a/b.py (or its package)."""
    module = absolute(path, imp.module)
    if not module:
        return []
    modules = module_index(repo)
    parts = module.split(".")
    if imp.name and imp.name != "*":
        sub = modules.get(".".join(parts + [imp.name]))
        if sub:
            return [sub]
    target = modules.get(module)
    return [target] if target else []


FAMILY = Family(NAME, SPEC, python_extract.imports, resolve_import)

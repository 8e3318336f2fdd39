"""The Go family: import specs (path and optional alias), resolved to the files of the package directory.

An import path is resolved against the module path of the nearest `go.mod` it falls under
(`module example.com/m` + `import "example.com/m/x/y"` -> the directory `x/y` beside that go.mod); a
repository without a matching go.mod falls back to the one package directory the import path ends with.
A package is every non-test `.go` file directly in its directory, so one import is an edge to each.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from pipelines.parse.facts import RawImport
from pipelines.parse.families.base import Family, RepoFiles
from pipelines.parse.languages import LanguageSpec
from pipelines.parse.nodes import descendants, node_text

NAME = "go"
GO_MOD = "go.mod"
_MODULE_LINE = re.compile(r"^\s*module\s+\"?([^\s\"/]+(?:/[^\s\"]+)*)\"?\s*$", re.M)
_MODULES = "go:modules"
_PACKAGES = "go:packages"

SPEC = LanguageSpec(
    family=NAME,
    functions=frozenset({"function_declaration", "method_declaration"}),
    classes=frozenset({"type_spec"}),
    descend=frozenset({"type_declaration"}),
    imports=frozenset({"import_declaration"}),
    call_query="(call_expression) @call",
    receiver_methods=True,
)


def imports(node: Any, line: int) -> list[RawImport]:
    """`import "a/b"`, `import x "a/b"` and import blocks: one RawImport per spec, with its own line."""
    found = []
    for spec in descendants(node, "import_spec"):
        module = node_text(spec.child_by_field_name("path")).strip('"`')
        alias = node_text(spec.child_by_field_name("name"))
        found.append(RawImport(module, "", alias, spec.start_point[0] + 1 if spec.start_point else line))
    return found


def modules(repo: RepoFiles) -> list[tuple[str, str]]:
    """(module path, directory) of every go.mod, longest module path first (nested modules win)."""
    if _MODULES not in repo.memo:
        found = []
        for path in sorted(p for p in repo.paths if posixpath.basename(p) == GO_MOD):
            match = _MODULE_LINE.search(repo.text_of(path))
            if match:
                found.append((match.group(1), posixpath.dirname(path)))
        repo.memo[_MODULES] = sorted(found, key=lambda m: (-len(m[0]), m[1]))
    return repo.memo[_MODULES]


def package_files(repo: RepoFiles, directory: str) -> list[str]:
    """The package in `directory`: its non-test Go files."""
    return [p for p in repo.files_in(directory) if repo.family_of(p) == NAME and not p.endswith("_test.go")]


def _package_dirs(repo: RepoFiles) -> set[str]:
    if _PACKAGES not in repo.memo:
        repo.memo[_PACKAGES] = {posixpath.dirname(p) for p in repo.paths if repo.family_of(p) == NAME}
    return repo.memo[_PACKAGES]


def resolve_import(repo: RepoFiles, path: str, imp: RawImport) -> list[str]:
    for module, directory in modules(repo):
        if imp.module == module or imp.module.startswith(module + "/"):
            rest = imp.module[len(module):].strip("/")
            return package_files(repo, posixpath.normpath(posixpath.join(directory, rest)) if rest or directory
                                 else "")
    dirs = [d for d in _package_dirs(repo) if d and (imp.module == d or imp.module.endswith("/" + d))]
    return package_files(repo, dirs[0]) if len(dirs) == 1 else []


FAMILY = Family(NAME, SPEC, imports, resolve_import)

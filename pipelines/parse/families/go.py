"""The Go family: import specs (path and optional alias), resolved to the files of the package directory.

An import path is resolved against the module path of the nearest `go.mod` it falls under
(`module example.com/m` + `import "example.com/m/x/y"` -> the directory `x/y` beside that go.mod); a
repository without a matching go.mod falls back to the one package directory the import path ends with.
A package is every non-test `.go` file directly in its directory, so one import is an edge to each.

Method sets (for `impls`): each interface's methods and each method declared with a receiver, as (name,
parameter count, result count); the resolver matches them (`pipelines.parse.resolution`). Type names in
type positions (parameter, field, result, variable and conversion types, composite literals, receivers)
are references (`type_refs`).
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from pipelines.parse.facts import ParsedFile, RawImport, RawInterface
from pipelines.parse.families.base import Family, RepoFiles
from pipelines.parse.languages import LanguageSpec
from pipelines.parse.nodes import IDENT, descendants, node_text

NAME = "go"
GO_MOD = "go.mod"
_MODULE_LINE = re.compile(r"^\s*module\s+\"?([^\s\"/]+(?:/[^\s\"]+)*)\"?\s*$", re.M)
_MODULES = "go:modules"
_PACKAGES = "go:packages"
_PACKAGE_CLAUSE = re.compile(r"^\s*package\s+([A-Za-z_]\w*)", re.M)
_NAMES = "go:package-names"
_MAJOR_VERSION = re.compile(r"^v\d+$")

SPEC = LanguageSpec(
    family=NAME,
    functions=frozenset({"function_declaration", "method_declaration"}),
    classes=frozenset({"type_spec"}),
    descend=frozenset({"type_declaration"}),
    imports=frozenset({"import_declaration"}),
    call_query="(call_expression) @call",
    receiver_methods=True,
    type_refs="(type_identifier) @type",
    builtin_types=frozenset({
        "any", "bool", "byte", "comparable", "complex64", "complex128", "error", "float32", "float64", "int",
        "int8", "int16", "int32", "int64", "rune", "string", "uint", "uint8", "uint16", "uint32", "uint64",
        "uintptr",
    }),
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


def _count(params: Any) -> int:
    """Parameters (or results) a parameter list declares: `(a, b int, c ...string)` is 3, `(int, error)` 2."""
    if params is None:
        return 0
    if params.type != "parameter_list":
        return 1  # a single unnamed result type
    total = 0
    for decl in params.named_children:
        if decl.type in ("parameter_declaration", "variadic_parameter_declaration"):
            names = [c for c in decl.children_by_field_name("name")]
            total += max(1, len(names))
    return total


def _signature(node: Any) -> tuple[str, int, int]:
    return (node_text(node.child_by_field_name("name")), _count(node.child_by_field_name("parameters")),
            _count(node.child_by_field_name("result")))


def method_sets(root: Any, out: ParsedFile) -> None:
    """Interfaces (their method elements and embedded interfaces) and receiver methods of one file."""
    for decl in root.named_children:
        if decl.type == "type_declaration":
            for spec in decl.named_children:
                body = spec.child_by_field_name("type")
                if spec.type != "type_spec" or body is None or body.type != "interface_type":
                    continue
                methods = tuple(_signature(m) for m in body.named_children if m.type == "method_elem")
                embeds = tuple(node_text(t) for e in body.named_children if e.type == "type_elem"
                               for t in e.named_children if t.type in ("type_identifier", "qualified_type"))
                out.interfaces.append(RawInterface(node_text(spec.child_by_field_name("name")), methods, embeds))
        elif decl.type == "method_declaration":
            receiver = IDENT.search(node_text(decl.child_by_field_name("receiver")).split(" ", 1)[-1].lstrip("(*"))
            name, params, results = _signature(decl)
            if receiver and name:
                out.receivers[f"{receiver.group(0)}.{name}"] = (name, params, results)


def package_name(repo: RepoFiles, imp: RawImport, files: list[str]) -> str:
    """The name an import binds in the importing file: its alias, else the imported files' package clause,
    else the path's last element (`gopkg.in/yaml.v3` -> yaml, `x/v2` -> x)."""
    if imp.alias:
        return imp.alias
    names: dict[str, str] = repo.memo.setdefault(_NAMES, {})
    for path in files[:1]:
        if path not in names:
            match = _PACKAGE_CLAUSE.search(repo.text_of(path))
            names[path] = match.group(1) if match else ""
        if names[path]:
            return names[path]
    parts = [p for p in imp.module.split("/") if p]
    if len(parts) > 1 and _MAJOR_VERSION.match(parts[-1]):
        parts.pop()
    return parts[-1].split(".", 1)[0].replace("-", "_") if parts else ""


FAMILY = Family(NAME, SPEC, imports, resolve_import, version="2", facts=method_sets)

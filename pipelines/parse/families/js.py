"""The JavaScript/TypeScript family: ESM imports and re-exports, CommonJS `require` and dynamic `import()`,
resolved to files.

A relative specifier resolves as the compilers do: the file itself, else its TypeScript source (ESM code
imports `./merge.js` for `merge.ts`: `.js` -> `.ts`/`.tsx`, `.jsx` -> `.tsx`, `.mjs` -> `.mts`, `.cjs` ->
`.cts`), else the specifier plus a known suffix, else a directory's index file. A bare specifier resolves
through the nearest `tsconfig.json`'s `compilerOptions.paths` and `baseUrl` (`js_paths`); anything else
names a package and stays unresolved.
"""

from __future__ import annotations

import posixpath
from typing import Any

from pipelines.parse.facts import RawImport
from pipelines.parse.families import js_paths
from pipelines.parse.families.base import Family, RepoFiles
from pipelines.parse.languages import LanguageSpec
from pipelines.parse.nodes import descendants, node_text

SOURCE_SUFFIXES = (".ts", ".tsx", ".mts", ".cts", ".d.ts", ".js", ".jsx", ".mjs", ".cjs")
COMPILED_TO_SOURCE = {".js": (".ts", ".tsx"), ".jsx": (".tsx",), ".mjs": (".mts",), ".cjs": (".cts",)}
INDEX_FILES = tuple("/index" + suffix for suffix in SOURCE_SUFFIXES)
FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})
_DESCEND = frozenset({"export_statement", "expression_statement", "ambient_declaration"})
_CALLS = "(call_expression) @call (new_expression) @call"
_FUNCTIONS = frozenset({"function_declaration", "generator_function_declaration", "method_definition"})
# statements that may hold `require("m")` / `import("m")` (top level: CommonJS modules load there)
_LOADING = frozenset({"lexical_declaration", "variable_declaration", "expression_statement"})
_LOADERS = frozenset({"require", "import"})
_IMPORTS = frozenset({"import_statement", "export_statement"}) | _LOADING

SPEC = LanguageSpec(
    family="js", functions=_FUNCTIONS, classes=frozenset({"class_declaration"}), descend=_DESCEND,
    imports=_IMPORTS, call_query=_CALLS, function_values=FUNCTION_VALUES,
)
TYPESCRIPT = LanguageSpec(
    family="js", functions=_FUNCTIONS,
    classes=frozenset({"class_declaration", "abstract_class_declaration", "interface_declaration",
                       "type_alias_declaration", "enum_declaration"}),
    namespaces=frozenset({"internal_module", "module"}), descend=_DESCEND,
    imports=_IMPORTS, call_query=_CALLS, function_values=FUNCTION_VALUES,
)


def _string(node: Any) -> str:
    return node_text(node).strip("'\"`")


def imports(node: Any, line: int) -> list[RawImport]:
    """`import {a as b} from "m"` -> (m, a, b); a bare or default import, `export ... from "m"`,
    `require("m")` and `import("m")` -> (m, "", "")."""
    if node.type in _LOADING:
        return _loaded(node)
    source = node.child_by_field_name("source")
    if source is None:  # `export const x = require("m")`, TypeScript's `import x = require("m")`
        return _loaded(node)
    module = _string(source)
    found = []
    for spec in descendants(node, "import_specifier"):
        name = node_text(spec.child_by_field_name("name"))
        alias = node_text(spec.child_by_field_name("alias")) or name
        found.append(RawImport(module, name, alias, line))
    return found or [RawImport(module, "", "", line)]


def _loaded(node: Any) -> list[RawImport]:
    """Every `require("m")` / `import("m")` with a literal specifier under `node`."""
    found, stack = [], [node]
    while stack:
        current = stack.pop()
        if current.type == "call_expression":
            fn, args = current.child_by_field_name("function"), current.child_by_field_name("arguments")
            first = args.named_children[0] if args is not None and args.named_children else None
            if fn is not None and node_text(fn) in _LOADERS and first is not None and first.type == "string":
                found.append(RawImport(_string(first), "", "", current.start_point[0] + 1))
        elif current.type == "import_require_clause":
            source = current.child_by_field_name("source")
            if source is not None:
                found.append(RawImport(_string(source), "", "", current.start_point[0] + 1))
        stack.extend(reversed(current.named_children))
    return found


def source_file(repo: RepoFiles, base: str) -> str | None:
    """The repository file a specifier resolved to `base` names (see the module docstring), or None."""
    if base in repo.paths:
        return base
    stem, ext = posixpath.splitext(base)
    for alternative in COMPILED_TO_SOURCE.get(ext, ()):
        if stem + alternative in repo.paths:
            return stem + alternative
    return next((base + suffix for suffix in SOURCE_SUFFIXES + INDEX_FILES if base + suffix in repo.paths), None)


def resolve_import(repo: RepoFiles, path: str, imp: RawImport) -> list[str]:
    if imp.module.startswith("."):
        found = source_file(repo, posixpath.normpath(posixpath.join(posixpath.dirname(path), imp.module)))
    else:
        found = next((f for base in js_paths.candidates(repo, path, imp.module)
                      if (f := source_file(repo, base)) is not None), None)
    return [found] if found is not None and found != path else []


FAMILY = Family("js", SPEC, imports, resolve_import, {"typescript": TYPESCRIPT, "tsx": TYPESCRIPT}, version="2")

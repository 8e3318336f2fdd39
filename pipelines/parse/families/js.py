"""The JavaScript/TypeScript family: import bindings, relative imports resolved to files."""

from __future__ import annotations

import posixpath
from typing import Any

from pipelines.parse.facts import RawImport
from pipelines.parse.families.base import Family, RepoFiles
from pipelines.parse.languages import LanguageSpec
from pipelines.parse.nodes import descendants, node_text

IMPORT_SUFFIXES = ("", ".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", "/index.ts", "/index.tsx", "/index.js")
FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})
_DESCEND = frozenset({"export_statement", "expression_statement", "ambient_declaration"})
_CALLS = "(call_expression) @call (new_expression) @call"
_FUNCTIONS = frozenset({"function_declaration", "generator_function_declaration", "method_definition"})

SPEC = LanguageSpec(
    family="js", functions=_FUNCTIONS, classes=frozenset({"class_declaration"}), descend=_DESCEND,
    imports=frozenset({"import_statement"}), call_query=_CALLS, function_values=FUNCTION_VALUES,
)
TYPESCRIPT = LanguageSpec(
    family="js", functions=_FUNCTIONS,
    classes=frozenset({"class_declaration", "abstract_class_declaration", "interface_declaration"}),
    namespaces=frozenset({"internal_module", "module"}), descend=_DESCEND,
    imports=frozenset({"import_statement"}), call_query=_CALLS, function_values=FUNCTION_VALUES,
)


def imports(node: Any, line: int) -> list[RawImport]:
    """`import {a as b} from "m"` -> (m, a, b); a bare or default import -> (m, "", "")."""
    module = node_text(node.child_by_field_name("source")).strip("'\"`")
    found = []
    for spec in descendants(node, "import_specifier"):
        name = node_text(spec.child_by_field_name("name"))
        alias = node_text(spec.child_by_field_name("alias")) or name
        found.append(RawImport(module, name, alias, line))
    return found or [RawImport(module, "", "", line)]


def resolve_import(repo: RepoFiles, path: str, imp: RawImport) -> list[str]:
    """A relative import: the first file the module names with a known suffix or index file."""
    if not imp.module.startswith("."):
        return []
    base = posixpath.normpath(posixpath.join(posixpath.dirname(path), imp.module))
    for suffix in IMPORT_SUFFIXES:
        if base + suffix in repo.paths:
            return [base + suffix]
    return []


FAMILY = Family("js", SPEC, imports, resolve_import, {"typescript": TYPESCRIPT, "tsx": TYPESCRIPT})

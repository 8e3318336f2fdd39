"""The C and C++ family: `#include "x.h"` and `#include <lib/x.h>` as imports, resolved to the repository's own
headers.

A quoted include resolves beside the including file first, as the preprocessor reads it; any include then
resolves to the one repository file whose path ends with it (`<fmt/base.h>` -> `include/fmt/base.h`: the include
directories a build passes with `-I` vary). A system or third-party header (`<vector>`) names no repository file
and stays an unresolved edge.
"""

from __future__ import annotations

import posixpath
from typing import Any

from pipelines.parse.facts import RawImport
from pipelines.parse.families.base import Family, RepoFiles, files_named
from pipelines.parse.languages import LanguageSpec
from pipelines.parse.nodes import node_text
from semantica.languages.spans import C_CLASSES, C_DESCEND

NAME = "c"

SPEC = LanguageSpec(
    family=NAME,
    functions=frozenset({"function_definition"}),
    classes=C_CLASSES,
    namespaces=frozenset({"namespace_definition"}),
    descend=C_DESCEND,
    imports=frozenset({"preproc_include"}),
    call_query="(call_expression) @call",
    import_scopes=frozenset({"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef",
                             "linkage_specification", "declaration_list", "namespace_definition"}),  # guards, `#if`
)


def imports(node: Any, line: int) -> list[RawImport]:
    """`#include "a/b.h"` or `<a/b.h>` -> the module `a/b.h` (a macro include names no file: none)."""
    target = node.child_by_field_name("path")
    if target is None or target.type not in ("string_literal", "system_lib_string"):
        return []
    module = node_text(target).strip('"<>').strip()
    return [RawImport(module, "", "", line)] if module else []


def resolve_import(repo: RepoFiles, path: str, imp: RawImport) -> list[str]:
    beside = posixpath.normpath(posixpath.join(posixpath.dirname(path), imp.module))
    if beside in repo.paths and beside != path:
        return [beside]
    tail = imp.module.lstrip("./")
    hits = [p for p in files_named(repo, posixpath.basename(tail)) if p == tail or p.endswith("/" + tail)]
    return hits if len(hits) == 1 and hits[0] != path else []


FAMILY = Family(NAME, SPEC, imports, resolve_import)

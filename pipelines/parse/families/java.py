"""The Java family: `import [static] a.b.C;` as a dotted module, resolved to the one file `a/b/C.java`."""

from __future__ import annotations

import posixpath
from typing import Any

from pipelines.parse.facts import RawImport
from pipelines.parse.families.base import Family, RepoFiles, files_named
from pipelines.parse.languages import LanguageSpec
from pipelines.parse.nodes import node_text

SPEC = LanguageSpec(
    family="java",
    functions=frozenset({"method_declaration", "constructor_declaration"}),
    classes=frozenset({
        "class_declaration", "interface_declaration", "enum_declaration", "record_declaration",
        "annotation_type_declaration",
    }),
    descend=frozenset({"enum_body_declarations"}),
    imports=frozenset({"import_declaration"}),
    call_query="(method_invocation) @call (object_creation_expression) @call",
)


def imports(node: Any, line: int) -> list[RawImport]:
    text = node_text(node).removeprefix("import").strip().rstrip(";").strip()
    return [RawImport(text.removeprefix("static ").strip(), "", "", line)]


def resolve_import(repo: RepoFiles, path: str, imp: RawImport) -> list[str]:
    """The one file whose path ends with the import as a path (source roots vary: src/main/java/...)."""
    tail = imp.module.replace(".", "/") + ".java"
    hits = [p for p in files_named(repo, posixpath.basename(tail)) if p == tail or p.endswith("/" + tail)]
    return hits if len(hits) == 1 else []


FAMILY = Family("java", SPEC, imports, resolve_import)

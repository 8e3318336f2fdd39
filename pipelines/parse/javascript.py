"""JavaScript/TypeScript-specific extraction: import bindings."""

from __future__ import annotations

from typing import Any

from pipelines.parse.facts import RawImport
from pipelines.parse.nodes import descendants, node_text


def imports(node: Any, line: int) -> list[RawImport]:
    """`import {a as b} from "m"` -> (m, a, b); a bare or default import -> (m, "", "")."""
    module = node_text(node.child_by_field_name("source")).strip("'\"`")
    found = []
    for spec in descendants(node, "import_specifier"):
        name = node_text(spec.child_by_field_name("name"))
        alias = node_text(spec.child_by_field_name("alias")) or name
        found.append(RawImport(module, name, alias, line))
    return found or [RawImport(module, "", "", line)]

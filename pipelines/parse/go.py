"""Go-specific extraction: import specs (path and optional alias)."""

from __future__ import annotations

from typing import Any

from pipelines.parse.facts import RawImport
from pipelines.parse.nodes import descendants, node_text


def imports(node: Any, line: int) -> list[RawImport]:
    found = []
    for spec in descendants(node, "import_spec"):
        module = node_text(spec.child_by_field_name("path")).strip('"`')
        alias = node_text(spec.child_by_field_name("name"))
        found.append(RawImport(module, "", alias, line))
    return found

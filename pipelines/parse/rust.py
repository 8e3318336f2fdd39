"""Rust-specific extraction: `use` paths as written."""

from __future__ import annotations

from typing import Any

from pipelines.parse.facts import RawImport
from pipelines.parse.nodes import node_text


def imports(node: Any, line: int) -> list[RawImport]:
    return [RawImport(node_text(node.child_by_field_name("argument") or node), "", "", line)]

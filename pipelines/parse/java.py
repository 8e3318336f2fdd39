"""Java-specific extraction: `import [static] a.b.C;` as a dotted module."""

from __future__ import annotations

from typing import Any

from pipelines.parse.facts import RawImport
from pipelines.parse.nodes import node_text


def imports(node: Any, line: int) -> list[RawImport]:
    text = node_text(node).removeprefix("import").strip().rstrip(";").strip()
    return [RawImport(text.removeprefix("static ").strip(), "", "", line)]

"""Python-specific extraction: import bindings and non-call references to file-level names."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipelines.parse.facts import RawImport, RawRef
from pipelines.parse.languages import python_refs_query
from pipelines.parse.nodes import node_text

_NAME_FIELDS = {
    "call": "function", "function_definition": "name", "class_definition": "name",
    "attribute": "attribute", "keyword_argument": "name",
}
_NOT_REFERENCE_PARENTS = frozenset({
    "import_statement", "import_from_statement", "dotted_name", "aliased_import", "parameters",
    "default_parameter", "typed_parameter", "typed_default_parameter", "global_statement",
    "nonlocal_statement",
})


def _is_binding_or_call(node: Any) -> bool:
    """True for identifiers that define a name, are called (CALLS covers them) or are attributes."""
    parent = node.parent
    if parent is None:
        return False
    if parent.type in _NOT_REFERENCE_PARENTS:
        return True
    name_field = _NAME_FIELDS.get(parent.type)
    return name_field is not None and parent.child_by_field_name(name_field) == node


def imports(node: Any, line: int) -> list[RawImport]:
    """The bindings of one `import` / `from ... import` statement."""
    found: list[RawImport] = []
    if node.type == "import_statement":
        for child in node.named_children:
            if child.type == "aliased_import":
                found.append(RawImport(node_text(child.child_by_field_name("name")), "",
                                       node_text(child.child_by_field_name("alias")), line))
            elif child.type == "dotted_name":
                found.append(RawImport(node_text(child), "", "", line))
        return found
    module = node_text(node.child_by_field_name("module_name")).replace(" ", "")
    names = node.children_by_field_name("name")
    if any(c.type == "wildcard_import" for c in node.named_children):
        found.append(RawImport(module, "*", "", line))
    for child in names:
        if child.type == "aliased_import":
            name = node_text(child.child_by_field_name("name"))
            found.append(RawImport(module, name, node_text(child.child_by_field_name("alias")), line))
        else:
            name = node_text(child)
            found.append(RawImport(module, name, name, line))
    return found


def references(root: Any, names: set[str], owner_of: Callable[[int], tuple[str, str] | None]) -> list[RawRef]:
    """Identifiers that name a file-level definition or import (`names`), used other than as a call.

    `owner_of(byte)` gives (node id, qualname) of the innermost definition holding that byte, or None.
    """
    from tree_sitter import QueryCursor

    refs: list[RawRef] = []
    seen: set[tuple[str, str]] = set()
    wanted = {name.encode("utf-8") for name in names}
    for node in sorted(QueryCursor(python_refs_query()).captures(root).get("id", []), key=lambda n: (n.start_byte, n.end_byte)):
        if node.text not in wanted:
            continue
        text = node_text(node)
        if _is_binding_or_call(node):
            continue
        owner = owner_of(node.start_byte)
        if owner is None:
            continue
        src, qualname = owner
        if (src, text) not in seen and qualname != text:
            seen.add((src, text))
            refs.append(RawRef(src, text, node.start_point[0] + 1))
    return refs

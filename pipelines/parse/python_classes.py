"""Per-class facts for the resolver: attribute types and which methods are properties.

Attributes: `self.x = <expr>` / `self.x: Foo` in any method (the expression typed in that method's
scope, so `self.x = x` takes the parameter's annotation), `x: Foo` / `x = Foo()` in the class body, and
containers filled in place when nothing else types them: `self.x.append(Foo())` -> `of:`,
`self.x[k] = Foo()` -> `map:`. The first binding in source order wins.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipelines.parse.nodes import node_text
from pipelines.parse.python_locals import LocalTypes, expr_kind
from pipelines.parse.python_types import MAP_PREFIX, SEQ_PREFIX, annotation_type

_FILL_SEQUENCE = frozenset({"append", "add", "appendleft", "insert"})
_PROPERTY_DECORATORS = frozenset({"property", "cached_property", "functools.cached_property"})


def _self_attribute(node: Any) -> str:
    """`x` for `self.x`, else ""."""
    if node is None or node.type != "attribute":
        return ""
    obj = node.child_by_field_name("object")
    return node_text(node.child_by_field_name("attribute")) if obj is not None and node_text(obj) == "self" else ""


def attribute_types(cls: Any, scope: str, methods: list[tuple[Any, list[Any]]],
                    locals_of: Callable[[Any], LocalTypes]) -> dict[str, str]:
    """Attribute -> type string for one class. `methods`: each method node with its assignment and call
    nodes in source order; `locals_of(method node)` gives that method's bindings."""
    types: dict[str, str] = {}
    body = cls.child_by_field_name("body")
    if body is None:
        return types
    class_level = LocalTypes(scope=scope)
    for statement in body.named_children:
        assignment = statement.named_children[0] if statement.type == "expression_statement" \
            and statement.named_children else statement
        if assignment.type == "assignment":
            left = assignment.child_by_field_name("left")
            kind = annotation_type(assignment.child_by_field_name("type")) or \
                expr_kind(assignment.child_by_field_name("right"), class_level)
            if left is not None and left.type == "identifier" and kind:
                types.setdefault(node_text(left), kind)
    fills: dict[str, str] = {}
    for method, nodes in methods:
        scope_types = locals_of(method)
        for node in nodes:
            if node.type == "assignment":
                left = node.child_by_field_name("left")
                kind = annotation_type(node.child_by_field_name("type")) or \
                    expr_kind(node.child_by_field_name("right"), scope_types)
                name = _self_attribute(left)
                if name and kind:
                    types.setdefault(name, kind)
                elif left is not None and left.type == "subscript" and kind:  # self.x[k] = Foo()
                    name = _self_attribute(left.child_by_field_name("value"))
                    if name:
                        fills.setdefault(name, MAP_PREFIX + kind)
                continue
            if node.type != "call":
                continue
            fn = node.child_by_field_name("function")  # self.x.append(Foo())
            if fn is None or fn.type != "attribute" or node_text(fn.child_by_field_name("attribute")) not in _FILL_SEQUENCE:
                continue
            name = _self_attribute(fn.child_by_field_name("object"))
            args = node.child_by_field_name("arguments")
            values = [a for a in args.named_children if a.type != "keyword_argument"] if args is not None else []
            kind = expr_kind(values[-1], scope_types) if name and values else ""
            if kind:
                fills.setdefault(name, SEQ_PREFIX + kind)
    for name, kind in fills.items():
        types.setdefault(name, kind)
    return types


def is_property(function: Any) -> bool:
    """Decorated `@property` / `@cached_property`: reading the attribute calls it."""
    parent = function.parent
    if parent is None or parent.type != "decorated_definition":
        return False
    return any(c.type == "decorator" and node_text(c).lstrip("@").strip() in _PROPERTY_DECORATORS
               for c in parent.named_children)

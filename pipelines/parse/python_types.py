"""Light Python type inference at extraction time: what a call's receiver is, as written in the file.

Per function: parameter annotations, `x: Foo = ...`, `x = Foo(...)` / `x = make()` (recorded as
`call:Foo` / `call:make`: the resolver decides whether that names a class or a function whose return
annotation gives the type). Per class: `self.attr = Foo(...)` / `self.attr: Foo` in its methods and
`attr: Foo` in its body. Return annotations per function. No flow analysis: the last binding wins.
"""

from __future__ import annotations

import re
from typing import Any

from pipelines.parse.nodes import dotted, node_text

CALL_PREFIX = "call:"
METHOD_PREFIX = "method:"  # "method:m:<type>": what method m returns on the class <type> names (chained calls)
SELF_TYPE = "Self"  # a method that returns self (or is annotated `-> Self`) returns its own class
_OPTIONAL = re.compile(r"^(?:[\w.]+\.)?Optional\[(.*)\]$", re.S)
_NAME = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*")
_NONE = "None"


def annotation_type(node: Any) -> str:
    """A dotted class name from an annotation (`Foo`, `"Foo"`, `Optional[Foo]`, `Foo | None`), or ""."""
    text = node_text(node).strip().strip("'\"").strip()
    match = _OPTIONAL.match(text)
    if match:
        text = match.group(1).strip()
    parts = [p.strip() for p in text.split("|") if p.strip() and p.strip() != _NONE]
    if not parts:
        return ""
    head = parts[0].split("[", 1)[0].strip().strip("'\"")
    return head if _NAME.fullmatch(head) else ""


def value_type(node: Any, known: dict[str, str] | None = None) -> str:
    """`Foo(...)` / `mod.make(...)` -> "call:Foo" / "call:mod.make"; `x.m(...)` with `x` of a `known` type ->
    "method:m:<type>"; the first branch of `a if c else b`; anything else -> ""."""
    while node is not None and node.type in ("conditional_expression", "parenthesized_expression") \
            and node.named_children:
        node = node.named_children[0]
    if node is None or node.type != "call":
        return ""
    fn = node.child_by_field_name("function")
    if fn is None or fn.type not in ("identifier", "attribute"):
        return ""
    obj = fn.child_by_field_name("object") if fn.type == "attribute" else None
    if obj is not None and obj.type == "identifier" and known and node_text(obj) in known:
        return f"{METHOD_PREFIX}{node_text(fn.child_by_field_name('attribute'))}:{known[node_text(obj)]}"
    name = dotted(node_text(fn))
    return CALL_PREFIX + name if _NAME.fullmatch(name) else ""


def _walk(node: Any, types: tuple[str, ...]) -> list[Any]:
    found, stack = [], [node]
    while stack:
        current = stack.pop()
        for child in current.named_children:
            if child.type in types:
                found.append(child)
            if child.type != "class_definition":
                stack.append(child)
    found.sort(key=lambda n: n.start_byte)
    return found


def _assigned(assignment: Any, known: dict[str, str] | None = None) -> tuple[Any, str]:
    """(left node, type) of an assignment: its annotation, else the type its call value makes."""
    annotation = assignment.child_by_field_name("type")
    kind = annotation_type(annotation) if annotation is not None else ""
    return assignment.child_by_field_name("left"), kind or value_type(assignment.child_by_field_name("right"), known)


def local_types(function: Any) -> dict[str, str]:
    """Local name -> type (as written) inside one function (nested functions included)."""
    types: dict[str, str] = {}
    params = function.child_by_field_name("parameters")
    for param in params.named_children if params is not None else []:
        if param.type not in ("typed_parameter", "typed_default_parameter"):
            continue
        name = param.child_by_field_name("name") or next(
            (c for c in param.named_children if c.type == "identifier"), None)
        kind = annotation_type(param.child_by_field_name("type"))
        if name is not None and name.type == "identifier" and kind:
            types[node_text(name)] = kind
    body = function.child_by_field_name("body")
    for assignment in _walk(body, ("assignment",)) if body is not None else []:
        left, kind = _assigned(assignment, types)
        if left is not None and left.type == "identifier" and kind:
            types[node_text(left)] = kind
    return types


def attribute_types(cls: Any) -> dict[str, str]:
    """Attribute -> type for one class: `self.x = Foo()` / `self.x: Foo` in methods, `x: Foo` in the body."""
    types: dict[str, str] = {}
    body = cls.child_by_field_name("body")
    if body is None:
        return types
    params: dict[int, dict[str, str]] = {}  # per method: `self.x = x` takes the parameter's annotation
    for method in _walk(body, ("function_definition",)):
        params[method.id] = local_types(method)
    for assignment in _walk(body, ("assignment",)):
        left, kind = _assigned(assignment)
        right = assignment.child_by_field_name("right")
        if not kind and right is not None and right.type == "identifier":
            method = _enclosing_function(assignment)
            kind = params.get(method.id, {}).get(node_text(right), "") if method is not None else ""
        if left is None or not kind:
            continue
        parent = assignment.parent
        at_class_level = parent == body or (parent is not None and parent.type == "expression_statement" and parent.parent == body)
        if left.type == "identifier" and at_class_level:
            types.setdefault(node_text(left), kind)  # class-level `x: Foo`
        elif left.type == "attribute" and node_text(left.child_by_field_name("object")) == "self":
            types.setdefault(node_text(left.child_by_field_name("attribute")), kind)
    return types


def module_types(root: Any) -> dict[str, str]:
    """Module-level variable -> type: `NAME: Foo = ...` or `NAME = Foo(...)` (top level only)."""
    types: dict[str, str] = {}
    for statement in root.named_children:  # grammars differ: a bare assignment or one in an expression_statement
        candidates = [statement] if statement.type == "assignment" else \
            [c for c in statement.named_children if c.type == "assignment"] if statement.type == "expression_statement" else []
        for assignment in candidates:
            left, kind = _assigned(assignment)
            if left is not None and left.type == "identifier" and kind:
                types[node_text(left)] = kind
    return types


def _enclosing_function(node: Any) -> Any:
    current = node.parent
    while current is not None and current.type != "function_definition":
        current = current.parent
    return current


def return_type(function: Any) -> str:
    """The return annotation's class, or SELF_TYPE for a method without one that returns `self`."""
    node = function.child_by_field_name("return_type")
    kind = annotation_type(node) if node is not None else ""
    if kind:
        return SELF_TYPE if kind.rsplit(".", 1)[-1] == SELF_TYPE else kind
    body = function.child_by_field_name("body")
    for ret in _walk(body, ("return_statement",)) if body is not None else []:
        if any(c.type == "identifier" and node_text(c) == "self" for c in ret.named_children):
            return SELF_TYPE
    return ""

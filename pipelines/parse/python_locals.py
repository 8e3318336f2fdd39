"""Per-function bindings by position, and the type string of an expression (grammar: python_types).

`LocalTypes` records every name a function binds (parameters, assignments, `for` / comprehension /
`with` / walrus targets, nested definitions) with the byte range where the binding is visible; the
type of a name at a use is its nearest binding above the use, evaluated lazily. A name the function
never binds is `ref:NAME` (a module-level name the resolver looks up). No flow analysis beyond that:
branches are read in source order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipelines.parse.languages import PYTHON_BINDING_NODES
from pipelines.parse.nodes import node_text
from pipelines.parse.python_types import (
    ATTR_PREFIX,
    CALL_PREFIX,
    ELEM_PREFIX,
    ITEM_PREFIX,
    MAP_PREFIX,
    METHOD_PREFIX,
    PART_PREFIX,
    REF_PREFIX,
    RET_PREFIX,
    SELF_TYPE,
    SEQ_PREFIX,
    annotation_type,
    is_self_call,
    tuple_kind,
    walk,
)

SELF_NAMES = frozenset({"self", "cls"})
MAX_EXPR_DEPTH = 12  # nesting of one expression's type string (chains, containers); deeper is ""
_PASS_THROUGH = frozenset({"parenthesized_expression", "conditional_expression", "await", "named_expression"})
_SEQUENCE_LITERALS = frozenset({"list", "set", "tuple", "expression_list"})
_COMPREHENSIONS = frozenset({"list_comprehension", "set_comprehension", "generator_expression"})
_COPIES = frozenset({"copy", "deepcopy"})
_SAME_ITERABLE = frozenset({"iter", "reversed"})
_COPY_ITERABLE = frozenset({"list", "sorted", "tuple", "set", "frozenset"})
_PARAM_TYPES = frozenset({"typed_parameter", "typed_default_parameter", "default_parameter", "identifier",
                          "list_splat_pattern", "dictionary_splat_pattern"})


@dataclass
class _Binding:
    start: int
    end: int
    node: Any = None  # the expression whose type the name takes (None: `kind` as given)
    kind: str = ""
    wrap: str = ""  # ELEM_PREFIX / ITEM_PREFIX / RET_PREFIX applied to the expression's type
    done: bool = False


class LocalTypes:
    """Bindings of one function (or none: module / class level) and the enclosing class `scope`."""

    def __init__(self, function: Any = None, scope: str = "", nodes: list[Any] | None = None) -> None:
        """`nodes`: the function's binding nodes in source order (python_bindings_query, bucketed by
        definition); without them the body is walked."""
        self.scope = scope
        self._names: dict[str, list[_Binding]] = {}
        self._busy: set[int] = set()
        if function is not None:
            self._collect(function, nodes)
            for bindings in self._names.values():
                bindings.sort(key=lambda b: b.start)

    # -- lookups --

    def lookup(self, name: str, byte: int) -> str | None:
        """The type `name` has at `byte` (its nearest typed binding above); "" when bound but unknown; None
        when this scope never binds it."""
        if name in SELF_NAMES and self.scope and (name not in self._names or self._is_param_only(name)):
            return self.scope
        bindings = self._names.get(name)
        if not bindings:
            return None
        for binding in reversed([b for b in bindings if b.start <= byte < b.end]):
            kind = self._kind(binding)  # an untyped rebinding (`x = None` in a branch) does not hide a typed one
            if kind:
                return kind
        return ""

    def _is_param_only(self, name: str) -> bool:
        return all(b.node is None and not b.kind for b in self._names.get(name, []))

    def _kind(self, b: _Binding) -> str:
        if b.done or b.node is None:
            return b.kind
        if id(b) in self._busy:  # `[x for x in x]`: the binding's own expression
            return ""
        self._busy.add(id(b))
        try:
            inner = expr_kind(b.node, self)
        finally:
            self._busy.discard(id(b))
        b.kind, b.done = (b.wrap + inner if inner else ""), True
        return b.kind

    # -- collection --

    def _bind(self, name_node: Any, binding: _Binding) -> None:
        if name_node is not None and name_node.type == "identifier":
            self._names.setdefault(node_text(name_node), []).append(binding)
        elif name_node is not None and name_node.type in ("pattern_list", "tuple_pattern", "tuple", "list_pattern"):
            for index, child in enumerate(name_node.named_children):  # `a, b = pair`: item `index` of it
                wrap = f"{PART_PREFIX}{index}:{binding.wrap}" if binding.node is not None else ""
                self._bind(child, _Binding(binding.start, binding.end, binding.node, binding.kind, wrap))

    def _params(self, function: Any) -> None:
        params = function.child_by_field_name("parameters")
        for param in params.named_children if params is not None else []:
            if param.type not in _PARAM_TYPES:
                continue
            name = param if param.type == "identifier" else param.child_by_field_name("name") or next(
                (c for c in param.named_children if c.type == "identifier"), None)
            kind = annotation_type(param.child_by_field_name("type"))
            if param.type == "list_splat_pattern" and kind:
                kind = SEQ_PREFIX + kind
            self._bind(name, _Binding(function.start_byte, function.end_byte, kind=kind, done=True))

    def _collect(self, function: Any, nodes: list[Any] | None) -> None:
        end = function.end_byte
        self._params(function)
        body = function.child_by_field_name("body")
        if body is None:
            return
        if nodes is None:
            nodes = walk(body, PYTHON_BINDING_NODES)
        for node in nodes:
            if node.id == function.id:
                continue
            if node.type == "assignment":
                annotation = annotation_type(node.child_by_field_name("type"))
                right = node.child_by_field_name("right")
                self._bind(node.child_by_field_name("left"),
                           _Binding(node.end_byte, end, None if annotation else right, annotation, done=bool(annotation)))
            elif node.type in ("for_statement", "for_in_clause"):
                visible = (node.parent.start_byte, node.parent.end_byte) if node.type == "for_in_clause" \
                    else (node.child_by_field_name("right").end_byte, end)
                self._loop_target(node.child_by_field_name("left"), node.child_by_field_name("right"), *visible)
            elif node.type == "as_pattern" and node.parent is not None and node.parent.type == "with_item":
                target = node.child_by_field_name("alias")
                target = target.named_children[0] if target is not None and target.named_children else target
                self._bind(target, _Binding(node.end_byte, end, node.named_children[0]))
            elif node.type == "named_expression":
                self._bind(node.child_by_field_name("name"), _Binding(node.end_byte, end, node.child_by_field_name("value")))
            elif node.type == "function_definition":
                self._params(node)
                self._bind(node.child_by_field_name("name"), self._definition_binding(node, end))
            elif node.type == "class_definition":  # a local class: bound, type unknown (not a symbol)
                self._bind(node.child_by_field_name("name"), _Binding(node.end_byte, end, done=True))

    @staticmethod
    def _definition_binding(node: Any, end: int) -> _Binding:
        """A nested `def`: decorated with `@d(...)` / `@d`, its name is what the decorator returns for it."""
        parent = node.parent
        decorators = [c for c in parent.named_children if c.type == "decorator"] \
            if parent is not None and parent.type == "decorated_definition" else []
        if not decorators or not decorators[0].named_children:
            return _Binding(node.end_byte, end, done=True)
        return _Binding(node.end_byte, end, decorators[0].named_children[0], wrap=RET_PREFIX)

    def _loop_target(self, left: Any, right: Any, start: int, end: int) -> None:
        """`for x in it`; `for i, x in enumerate(it)`; `for k, v in d.items()`; `for a, b in zip(p, q)`."""
        if left is None or right is None:
            return
        names = left.named_children if left.type in ("pattern_list", "tuple_pattern", "tuple") else []
        fn = right.child_by_field_name("function") if right.type == "call" else None
        args = [a for a in right.child_by_field_name("arguments").named_children] if fn is not None \
            and right.child_by_field_name("arguments") is not None else []
        if names and fn is not None and fn.type == "identifier" and node_text(fn) == "enumerate" and args:
            self._bind(names[-1], _Binding(start, end, args[0], wrap=ELEM_PREFIX))
        elif names and fn is not None and fn.type == "identifier" and node_text(fn) == "zip":
            for name, arg in zip(names, args):
                self._bind(name, _Binding(start, end, arg, wrap=ELEM_PREFIX))
        elif len(names) == 2 and fn is not None and fn.type == "attribute" \
                and node_text(fn.child_by_field_name("attribute")) == "items":
            self._bind(names[1], _Binding(start, end, fn.child_by_field_name("object"), wrap=ITEM_PREFIX))
        else:
            self._bind(left, _Binding(start, end, right, wrap=ELEM_PREFIX))


def _wrap(prefix: str, inner: str) -> str:
    return prefix + inner if inner else ""


def expr_kind(node: Any, scope: LocalTypes, depth: int = MAX_EXPR_DEPTH) -> str:
    """The type string of an expression in `scope` ("" when unknown)."""
    if node is None or depth <= 0:
        return ""
    t, down = node.type, depth - 1
    if t in _PASS_THROUGH and node.named_children:
        child = node.child_by_field_name("value") if t == "named_expression" else node.named_children[0]
        return expr_kind(child, scope, down)
    if t == "boolean_operator":
        return expr_kind(node.child_by_field_name("left"), scope, down) or \
            expr_kind(node.child_by_field_name("right"), scope, down)
    if t == "identifier":
        name = node_text(node)
        bound = scope.lookup(name, node.start_byte)
        return REF_PREFIX + name if bound is None else bound
    if t == "attribute":
        obj, attr = node.child_by_field_name("object"), node_text(node.child_by_field_name("attribute"))
        owner = expr_kind(obj, scope, down)
        if owner.startswith(REF_PREFIX):  # module.attr, Class.attr: a dotted name the resolver looks up
            return owner + "." + attr
        return f"{ATTR_PREFIX}{attr}:{owner}" if owner else ""
    if t == "call":
        return _call_kind(node, scope, down)
    if t == "subscript":
        return _wrap(ITEM_PREFIX, expr_kind(node.child_by_field_name("value"), scope, down))
    if t in _SEQUENCE_LITERALS:
        items = [c for c in node.named_children if c.type != "comment"]
        if t in ("tuple", "expression_list"):
            return tuple_kind([expr_kind(i, scope, down) for i in items])
        return _wrap(SEQ_PREFIX, expr_kind(items[0], scope, down)) if items else ""
    if t in _COMPREHENSIONS:
        return _wrap(SEQ_PREFIX, expr_kind(node.child_by_field_name("body"), scope, down))
    if t in ("dictionary", "dictionary_comprehension"):
        pair = node.child_by_field_name("body") if t == "dictionary_comprehension" else \
            next((c for c in node.named_children if c.type == "pair"), None)
        return _wrap(MAP_PREFIX, expr_kind(pair.child_by_field_name("value"), scope, down)) if pair is not None else ""
    return ""


def _call_kind(node: Any, scope: LocalTypes, depth: int) -> str:
    fn = node.child_by_field_name("function")
    args = node.child_by_field_name("arguments")
    first = args.named_children[0] if args is not None and args.named_children else None
    if fn is None:
        return ""
    if fn.type == "identifier":
        name = node_text(fn)
        bound = scope.lookup(name, fn.start_byte)
        if bound is None and name in _SAME_ITERABLE:
            return expr_kind(first, scope, depth)
        if bound is None and name in _COPY_ITERABLE:
            return _wrap(SEQ_PREFIX, _wrap(ELEM_PREFIX, expr_kind(first, scope, depth)))
        if bound is None and name == "next":
            return _wrap(ELEM_PREFIX, expr_kind(first, scope, depth))
        if bound is None:
            return CALL_PREFIX + name
        return CALL_PREFIX + bound.removeprefix(REF_PREFIX) if bound.startswith(REF_PREFIX) else _wrap(RET_PREFIX, bound)
    if fn.type == "attribute":
        owner = expr_kind(fn.child_by_field_name("object"), scope, depth)
        method = node_text(fn.child_by_field_name("attribute"))
        if owner == REF_PREFIX + "copy" and method in _COPIES:  # copy.copy(x) is an x
            return expr_kind(first, scope, depth)
        if owner.startswith(REF_PREFIX):
            return CALL_PREFIX + owner.removeprefix(REF_PREFIX) + "." + method
        return f"{METHOD_PREFIX}{method}:{owner}" if owner else ""
    return _wrap(RET_PREFIX, expr_kind(fn, scope, depth))


def return_kind(function: Any, scope: LocalTypes, nodes: list[Any] | None = None) -> str:
    """The return annotation's type; without one, SELF_TYPE for `return self` / `return cls(...)`, else
    the first `return` whose value has a known type (the function's own returns, not nested ones)."""
    kind = annotation_type(function.child_by_field_name("return_type"))
    if kind:
        return SELF_TYPE if kind.rsplit(".", 1)[-1] == SELF_TYPE else kind
    body = function.child_by_field_name("body")
    if nodes is not None:  # the function's own returns: not those of a nested def
        returns = [n for n in nodes if n.type == "return_statement" and _function_of(n) == function.id]
    else:
        returns = walk(body, ("return_statement",), into_functions=False) if body is not None else []
    values = [r.named_children[0] for r in returns if r.named_children]
    if any((v.type == "identifier" and node_text(v) == "self") or is_self_call(v) for v in values):
        return SELF_TYPE
    for value in values:
        kind = expr_kind(value, scope)
        if kind and not kind.startswith(REF_PREFIX + "None"):
            return kind
    return ""


def _function_of(node: Any) -> int:
    current = node.parent
    while current is not None and current.type != "function_definition":
        current = current.parent
    return current.id if current is not None else -1


def module_types(root: Any) -> dict[str, str]:
    """Module-level variable -> type: `NAME: Foo = ...`, `NAME = Foo(...)`, `NAME = {k: Foo()}` (top level)."""
    types: dict[str, str] = {}
    scope = LocalTypes()
    for statement in root.named_children:  # grammars differ: a bare assignment or one in an expression_statement
        candidates = [statement] if statement.type == "assignment" else \
            [c for c in statement.named_children if c.type == "assignment"] if statement.type == "expression_statement" else []
        for assignment in candidates:
            left = assignment.child_by_field_name("left")
            kind = annotation_type(assignment.child_by_field_name("type")) or \
                expr_kind(assignment.child_by_field_name("right"), scope)
            if left is not None and left.type == "identifier" and kind and not kind.startswith(REF_PREFIX):
                types[node_text(left)] = kind
    return types

"""Repo-level evaluation of the type strings extraction wrote (grammar: python_types).

A value is a class node id (an instance, or the class object: both call the same methods), a
function `fn:<node id>` (a function or bound method used as a value), or a container of a value
(`of:<value>`, `map:<value>`). Evaluation follows the repository's own definitions: imports, return
types, class attribute types (through bases), properties and module variables; anything else is None.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    TUPLE_PREFIX,
)
from semantica.schema import SymbolKind

if TYPE_CHECKING:
    from pipelines.parse.resolution import _Resolution

FN_PREFIX = "fn:"
MAX_VALUE_DEPTH = 16  # nested evaluations of one type string (chains through returns and attributes)
_ITEM_METHODS = frozenset({"pop", "popleft", "__getitem__", "get", "setdefault"})
_SAME_METHODS = frozenset({"copy"})
_FUNCTION_KINDS = frozenset({SymbolKind.FUNCTION.value, SymbolKind.METHOD.value})


class ValueResolver:
    """`value(path, kind)`: what a type string written in `path` denotes in this repository."""

    def __init__(self, res: _Resolution) -> None:
        self.res = res
        self.attributes = {f"{pf.path}::{cls}": attrs for pf in res.parsed for cls, attrs in pf.attributes.items()}
        self.properties = {f"{pf.path}::{q}" for pf in res.parsed for q in pf.properties}
        self._memo: dict[tuple[str, str], str | None] = {}

    def value(self, path: str, kind: str, depth: int = MAX_VALUE_DEPTH) -> str | None:
        if depth <= 0 or not kind:
            return None
        key = (path, kind)
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = None  # a cycle evaluates to None
        found = self._evaluate(path, kind, depth - 1)
        self._memo[key] = found
        return found

    def _evaluate(self, path: str, kind: str, depth: int) -> str | None:
        for prefix in (SEQ_PREFIX, MAP_PREFIX):
            if kind.startswith(prefix):
                inner = self.value(path, kind.removeprefix(prefix), depth)
                return prefix + inner if inner else None
        if kind.startswith(TUPLE_PREFIX):
            items = [self.value(path, k, depth) or "" if k else "" for k in kind.removeprefix(TUPLE_PREFIX).split("|")]
            return TUPLE_PREFIX + "|".join(items) if any(items) else None
        if kind.startswith(PART_PREFIX):
            index, _, inner = kind.removeprefix(PART_PREFIX).partition(":")
            return self.part(self.value(path, inner, depth), int(index) if index.isdigit() else -1, depth)
        if kind.startswith(ELEM_PREFIX):
            return self.element(self.value(path, kind.removeprefix(ELEM_PREFIX), depth), depth)
        if kind.startswith(ITEM_PREFIX):
            return self.item(self.value(path, kind.removeprefix(ITEM_PREFIX), depth), depth)
        if kind.startswith(RET_PREFIX):
            return self.called(self.value(path, kind.removeprefix(RET_PREFIX), depth), depth)
        for prefix, handler in ((METHOD_PREFIX, self.method_result), (ATTR_PREFIX, self.attribute)):
            if kind.startswith(prefix):
                name, _, owner = kind.removeprefix(prefix).partition(":")
                return handler(self.value(path, owner, depth), name, depth)
        if kind.startswith(REF_PREFIX):
            return self.ref(path, kind.removeprefix(REF_PREFIX), depth)
        if kind.startswith(CALL_PREFIX):
            return self.called(self.ref(path, kind.removeprefix(CALL_PREFIX), depth), depth)
        target = self.res._python_symbol(path, kind, depth)  # an annotation: a class name
        return target if target and self.res.symbols[target].kind == SymbolKind.CLASS.value else None

    # -- one step each --

    def ref(self, path: str, dotted: str, depth: int) -> str | None:
        """A name as written in `path`: a class, a function (`fn:`), a module variable's type, or an
        attribute of one of those (`mod.VAR`, `VAR.attr`)."""
        sym = self.res._python_symbol(path, dotted, depth)
        if sym is not None:
            kind = self.res.symbols[sym].kind
            return sym if kind == SymbolKind.CLASS.value else FN_PREFIX + sym if kind in _FUNCTION_KINDS else None
        where, kind = self._module_variable(path, dotted)
        if kind:
            return self.value(where, kind, depth)
        head, _, last = dotted.rpartition(".")
        return self.attribute(self.ref(path, head, depth - 1), last, depth) if head else None

    def _module_variable(self, path: str, dotted: str) -> tuple[str, str]:
        """(module path, type) of a typed module-level variable named `dotted` in `path`."""
        globals_ = self.res.globals
        if "." not in dotted and dotted in globals_.get(path, {}):
            return path, globals_[path][dotted]
        parts = dotted.split(".")
        target = self.res.bindings.get(path, {}).get(parts[0])
        if target is None:
            return "", ""
        absolute = target + parts[1:]
        module = self.res._module_path(absolute[:-1]) if len(absolute) > 1 else None
        return (module, globals_.get(module, {}).get(absolute[-1], "")) if module else ("", "")

    def called(self, value: str | None, depth: int) -> str | None:
        """Calling a value: a function gives its return value, a class its instance."""
        if value is None:
            return None
        if value.startswith(FN_PREFIX):
            return self.returned(value.removeprefix(FN_PREFIX), depth)
        return value if value in self.res.symbols else None

    def returned(self, function_id: str, depth: int) -> str | None:
        kind = self.res.returns.get(function_id, "")
        sym = self.res.symbols.get(function_id)
        if not kind or sym is None:
            return None
        if kind == SELF_TYPE:
            return sym.parent if sym.parent in self.res.symbols else None
        return self.value(sym.path, kind, depth)

    def part(self, value: str | None, index: int, depth: int) -> str | None:
        """Item `index` of an unpacked value: that item of a tuple, else an element of the sequence."""
        if value is not None and value.startswith(TUPLE_PREFIX):
            items = value.removeprefix(TUPLE_PREFIX).split("|")
            return items[index] or None if 0 <= index < len(items) else None
        return self.element(value, depth)

    def element(self, value: str | None, depth: int) -> str | None:
        """What iterating a value yields: a sequence's elements, or what its class's `__iter__` yields."""
        if value is None or value.startswith(MAP_PREFIX) or value.startswith(FN_PREFIX):
            return None
        if value.startswith(TUPLE_PREFIX):  # iterating a tuple: its first known item
            return next((v for v in value.removeprefix(TUPLE_PREFIX).split("|") if v), None)
        if value.startswith(SEQ_PREFIX):
            return value.removeprefix(SEQ_PREFIX)
        method = self.res._find_method(value, "__iter__", depth)
        result = self.returned(method, depth) if method else None
        return result.removeprefix(SEQ_PREFIX) if result and result.startswith(SEQ_PREFIX) else None

    def item(self, value: str | None, depth: int) -> str | None:
        """What `value[k]` gives: a container's element, or its class's `__getitem__` result."""
        if value is None or value.startswith(FN_PREFIX):
            return None
        if value.startswith(TUPLE_PREFIX):
            return self.element(value, depth)
        for prefix in (SEQ_PREFIX, MAP_PREFIX):
            if value.startswith(prefix):
                return value.removeprefix(prefix)
        method = self.res._find_method(value, "__getitem__", depth)
        return self.returned(method, depth) if method else None

    def method_result(self, value: str | None, name: str, depth: int) -> str | None:
        """What `value.name(...)` returns (container methods included: `pop`, `get`, `values`, `copy`)."""
        if value is None or value.startswith(FN_PREFIX):
            return None
        if value.startswith(SEQ_PREFIX) or value.startswith(MAP_PREFIX):
            if name in _ITEM_METHODS:
                return self.item(value, depth)
            if name in _SAME_METHODS:
                return value
            return SEQ_PREFIX + value.removeprefix(MAP_PREFIX) if name == "values" and value.startswith(MAP_PREFIX) \
                else None
        method = self.res._find_method(value, name, depth)
        return self.returned(method, depth) if method else None

    def attribute(self, value: str | None, name: str, depth: int) -> str | None:
        """`value.name`: the class's typed attribute (own or inherited), a property's return value, or a
        bound method (`fn:`)."""
        if value is None or value not in self.res.symbols or self.res.symbols[value].kind != SymbolKind.CLASS.value:
            return None
        for cls in self._mro(value, depth):
            kind = self.attributes.get(cls, {}).get(name)
            if kind:
                return self.value(self.res.symbols[cls].path, kind, depth)
        method = self.res._find_method(value, name, depth)
        if method is None:
            return None
        return self.returned(method, depth) if method in self.properties else FN_PREFIX + method

    def _mro(self, cls: str, depth: int) -> list[str]:
        order, stack = [], [cls]
        while stack and len(order) < depth:
            current = stack.pop(0)
            if current not in order:
                order.append(current)
                stack.extend(self.res._class_bases(current))
        return order

    # -- what the resolver asks --

    def method_on(self, path: str, kind: str, name: str) -> str | None:
        """`name` called on a receiver of type `kind`: the method of the receiver's class."""
        value = self.value(path, kind)
        if value is None or value not in self.res.symbols or self.res.symbols[value].kind != SymbolKind.CLASS.value:
            return None
        return self.res._find_method(value, name, MAX_VALUE_DEPTH)

    def callee(self, path: str, kind: str) -> str | None:
        """The definition a called value runs: a function, or a class's own `__init__` (else the class)."""
        value = self.value(path, kind)
        if value is None:
            return None
        if value.startswith(FN_PREFIX):
            return value.removeprefix(FN_PREFIX)
        if value in self.res.symbols and self.res.symbols[value].kind == SymbolKind.CLASS.value:
            return self.res.constructor(value)
        return None

    def function(self, path: str, kind: str) -> str | None:
        """The function or method a value names (`self.on_exit`, `mod.func`), for callback references."""
        value = self.value(path, kind)
        return value.removeprefix(FN_PREFIX) if value and value.startswith(FN_PREFIX) else None

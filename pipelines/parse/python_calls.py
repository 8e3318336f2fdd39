"""Python call facts that need types: receivers, called values, `super()` in local classes, callbacks.

One `PythonCallTyping` per file; scopes (`LocalTypes`) are built once per definition and shared by every
call in it. The type strings are evaluated later by the repo-level resolver (`python_values`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from pipelines.parse.facts import OTHER_RECEIVER, SELF_RECEIVERS, SUPER_RECEIVER, RawRef
from pipelines.parse.languages import python_bindings_query
from pipelines.parse.nodes import node_text
from pipelines.parse.python_classes import attribute_types, is_property
from pipelines.parse.python_locals import LocalTypes, expr_kind, return_kind
from pipelines.parse.python_types import REF_PREFIX

VALUE_CALL = "()"  # RawCall.name of a call whose callee is a value (`self.handlers[k]()`, a local `fn()`)
_CALLBACK_ARGS = frozenset({"attribute"})


class PythonCallTyping:
    """Types for the calls of one file. `owner` is the innermost definition (an extract `_Def`) or None;
    `calls` are the file's call nodes in source order (one query finds them and the binding nodes)."""

    def __init__(self, defs: list[Any], root: Any, owner_of: Callable[[int], Any]) -> None:
        from tree_sitter import QueryCursor

        self._defs = defs
        self._symbol_nodes = {d.node.id for d in defs}
        self._scopes: dict[int, LocalTypes] = {}
        self._nodes: dict[int, list[Any]] = defaultdict(list)  # definition node id -> its binding nodes
        captures = QueryCursor(python_bindings_query()).captures(root)
        # capture order varies run to run: sort, so the facts (and their lines) do not depend on luck
        self.calls = sorted(captures.get("call", []), key=lambda n: (n.start_byte, n.end_byte))
        for node in sorted(captures.get("n", []) + self.calls, key=lambda n: (n.start_byte, n.end_byte)):
            owner = owner_of(node.start_byte)
            if owner is not None:
                self._nodes[owner.node.id].append(node)

    def scope(self, owner: Any, scope: str) -> LocalTypes:
        return self._node_scope(owner.node if owner is not None else None, scope)

    def _node_scope(self, node: Any, scope: str) -> LocalTypes:
        key = node.id if node is not None else -1
        if key not in self._scopes:
            is_function = node is not None and node.type == "function_definition"
            self._scopes[key] = LocalTypes(node if is_function else None, scope, self._nodes.get(key, []))
        return self._scopes[key]

    def receiver_kind(self, node: Any, receiver: str, owner: Any, scope: str) -> str:
        """The type of `recv` in `recv.m(...)` ("" when the resolver needs none or none is known)."""
        fn = node.child_by_field_name("function")
        if fn is None or fn.type != "attribute" or receiver in SELF_RECEIVERS:
            return ""
        if receiver == SUPER_RECEIVER:
            return self._local_super(node, owner, scope)
        return expr_kind(fn.child_by_field_name("object"), self.scope(owner, scope))

    def callee_kind(self, node: Any, owner: Any, scope: str) -> str:
        """The type of the called value when it is not a plain name: `handlers[k]()`, `make()()`, or a local
        name the function binds (`fn = self.pick(); fn()`); "" otherwise."""
        fn = node.child_by_field_name("function")
        if fn is None or fn.type == "attribute":
            return ""
        if fn.type == "identifier":
            bound = self.scope(owner, scope).lookup(node_text(fn), fn.start_byte)
            return bound if bound and not bound.startswith(REF_PREFIX) else ""
        return expr_kind(fn, self.scope(owner, scope))

    def _local_super(self, node: Any, owner: Any, scope: str) -> str:
        """`super()` in a class defined inside a function (not a symbol): its first base, typed."""
        cls = node.parent
        while cls is not None and cls.type != "class_definition":
            cls = cls.parent
        if cls is None or cls.id in self._symbol_nodes:
            return ""
        bases = cls.child_by_field_name("superclasses")
        first = next((b for b in bases.named_children if b.type != "keyword_argument"), None) if bases is not None else None
        return expr_kind(first, self.scope(owner, scope)) if first is not None else ""

    def callbacks(self, node: Any, src: str, owner: Any, scope: str) -> list[RawRef]:
        """Methods passed as arguments (`self.on_exit`, `obj.method`, `mod.func`): references, not calls."""
        args = node.child_by_field_name("arguments")
        refs = []
        for arg in args.named_children if args is not None and args.type == "argument_list" else []:
            value = arg.child_by_field_name("value") if arg.type == "keyword_argument" else arg
            if value is None or value.type not in _CALLBACK_ARGS:
                continue
            kind = expr_kind(value, self.scope(owner, scope))
            if kind:
                refs.append(RawRef(src, node_text(value), value.start_point[0] + 1, kind))
        return refs

    def file_facts(self, class_kind: str) -> tuple[dict[str, str], dict[str, dict[str, str]], list[str]]:
        """(returns by qualname, attribute types by class qualname, property qualnames) of the file."""
        returns: dict[str, str] = {}
        attributes: dict[str, dict[str, str]] = {}
        properties: list[str] = []
        for d in self._defs:
            if d.kind.value == class_kind:
                methods = [(m.node, self._nodes.get(m.node.id, [])) for m in self._defs
                           if m.parent.endswith("::" + d.qualname) and m.node.type == "function_definition"]
                types = attribute_types(d.node, d.qualname, methods, lambda m, q=d.qualname: self._node_scope(m, q))
                if types:
                    attributes[d.qualname] = types
                continue
            scope = d.parent.split("::", 1)[1] if d.parent else ""
            kind = return_kind(d.node, self.scope(d, scope), self._nodes.get(d.node.id, []))
            if kind:
                returns[d.qualname] = kind
            if is_property(d.node):
                properties.append(d.qualname)
        return returns, attributes, properties


__all__ = ["OTHER_RECEIVER", "VALUE_CALL", "PythonCallTyping"]

"""Go's implicit interfaces: a named type implements an interface when its method set holds every method of
the interface's (embedded interfaces included). Matched by method name, parameter count and result count
(not by parameter types: the parse has no type checker), over the methods declared with a receiver of
that type anywhere in its package (pointer and value receivers together, as `*T` holds both). An interface
whose methods are all exported is matched against the types of every package; one with an unexported
method only in its own package (no other package can implement it). Empty interfaces match nothing.
Each match is an INHERITS edge type -> interface (resolution `type`), what `impls` follows.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Iterable

from pipelines.parse.facts import MAX_RESOLVE_DEPTH, ParsedFile, RawInterface
from semantica.schema import Edge, EdgeType, Resolution, Symbol, SymbolKind, symbol_node_id

Method = tuple[str, int, int]


class MethodSets:
    """The interfaces and receiver methods of one repository's Go files, matched once."""

    def __init__(self, parsed: Iterable[ParsedFile], symbols: dict[str, Symbol]) -> None:
        self.symbols = symbols
        self.interfaces: dict[str, tuple[str, RawInterface]] = {}  # interface symbol id -> (package dir, facts)
        self.by_package: dict[tuple[str, str], str] = {}  # (package dir, interface name) -> symbol id
        self.methods: dict[tuple[str, str], set[Method]] = defaultdict(set)  # (package dir, type) -> methods
        for pf in parsed:
            directory = posixpath.dirname(pf.path)
            for iface in pf.interfaces:
                sid = symbol_node_id(pf.path, iface.qualname)
                if sid in symbols:
                    self.interfaces[sid] = (directory, iface)
                    self.by_package[(directory, iface.qualname)] = sid
            for qualname, method in pf.receivers.items():
                self.methods[(directory, qualname.rsplit(".", 1)[0])].add(method)

    def method_set(self, sid: str, depth: int = MAX_RESOLVE_DEPTH) -> set[Method]:
        """An interface's methods with those of the interfaces it embeds from its own package."""
        directory, iface = self.interfaces[sid]
        found = set(iface.methods)
        if depth > 0:
            for embedded in iface.embeds:
                inner = self.by_package.get((directory, embedded))
                if inner is not None and inner != sid:
                    found |= self.method_set(inner, depth - 1)
        return found

    def edges(self) -> list[Edge]:
        by_method: dict[Method, set[tuple[str, str]]] = defaultdict(set)
        for owner, methods in self.methods.items():
            for method in methods:
                by_method[method].add(owner)
        types = self._types()
        edges = []
        for sid, (directory, _) in sorted(self.interfaces.items()):
            wanted = self.method_set(sid)
            if not wanted:
                continue
            owners = set.intersection(*(by_method.get(m, set()) for m in wanted))
            if not all(name[:1].isupper() for name, _, _ in wanted):
                owners = {o for o in owners if o[0] == directory}
            for owner in sorted(owners):
                for type_id in types.get(owner, []):
                    if type_id != sid:
                        sym = self.symbols[type_id]
                        edges.append(Edge(type_id, sid, EdgeType.INHERITS.value, sym.repo, sym.path,
                                          sym.start_line, resolution=Resolution.TYPE.value))
        return edges

    def _types(self) -> dict[tuple[str, str], list[str]]:
        """(package dir, type name) -> the type's symbol ids (one, unless build tags declare it twice)."""
        found: dict[tuple[str, str], list[str]] = defaultdict(list)
        for sid, sym in self.symbols.items():
            if sym.kind == SymbolKind.CLASS.value and "." not in sym.qualname and sym.language == "go":
                key = (posixpath.dirname(sym.path), sym.qualname)
                if key in self.methods:
                    found[key].append(sid)
        return found

"""Exact graph answers: callers, callees, definitions, references, implementations, imports.

Answered from a snapshot's symbols and edges (`edges.parquet`, whatever `graph.store` serves the graph
retriever), so they are exact and cheap: one in-memory index per snapshot, dictionary lookups per
question. Each answer cites the line of the edge (`path:line`, the call line for callers) and the
chunk that holds that line, and says how the edge was resolved; answers are ordered by depth, then
resolution tier (bindings, unique name, bare name), then path and line.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from semantica.errors import ErrorKind
from semantica.schema import Chunk, Edge, EdgeType, Resolution, Symbol, SymbolKind, file_node_id, module_of
from semantica.snapshot import Snapshot
from serving.graph.structural import GraphOp

PYTHON_INIT = "__init__"
_FILE_PREFIX = "file:"
_USE_TYPES = (EdgeType.CALLS.value, EdgeType.REFERENCES.value, EdgeType.INHERITS.value)


class UnknownNameError(LookupError):
    """No symbol (or module) of that name in the searched snapshots (HTTP 404)."""

    error_kind = ErrorKind.NOT_FOUND


@dataclass
class GraphAnswer:
    """One node of an exact answer, cited where the edge is (`citation` = path:line)."""

    repo: str
    node: str
    qualname: str
    path: str
    line: int
    citation: str
    chunk_id: str
    resolution: str
    depth: int
    target: str
    kind: str = ""
    sites: list[str] = field(default_factory=list)  # every `path:line` of the edge (each call line), first = citation

    @property
    def tier(self) -> int:
        try:
            return Resolution(self.resolution).tier
        except ValueError:  # a snapshot written before edges carried their resolution
            return Resolution.NAME.tier


@dataclass
class GraphResult:
    """The answer to one op: the candidates X resolved to (several = ambiguous) and the answers."""

    op: str
    name: str
    candidates: list[str]
    answers: list[GraphAnswer] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)

    @property
    def ambiguous(self) -> bool:
        return len(self.candidates) > 1

    def to_dict(self) -> dict[str, Any]:
        note = (f"{self.name!r} is ambiguous: answered for each of {len(self.candidates)} candidates"
                if self.ambiguous else "")
        return {"op": self.op, "name": self.name, "candidates": self.candidates, "ambiguous": self.ambiguous,
                "note": note, "answers": [asdict(a) for a in self.answers], "unresolved": self.unresolved}


class SnapshotGraph:
    """In-memory adjacency and name tables of one snapshot (built once, read by every question)."""

    def __init__(self, repo: str, symbols: list[Symbol], edges: list[Edge], chunks: list[Chunk]) -> None:
        self.repo = repo
        self.symbols: dict[str, Symbol] = {s.symbol_id: s for s in symbols}
        self.incoming: dict[str, list[Edge]] = defaultdict(list)
        self.outgoing: dict[str, list[Edge]] = defaultdict(list)
        for edge in edges:
            self.outgoing[edge.src].append(edge)
            if edge.resolved:
                self.incoming[edge.dst].append(edge)
        self.by_name: dict[str, list[str]] = defaultdict(list)
        self.by_qualname: dict[str, list[str]] = defaultdict(list)
        for sym in self.symbols.values():
            self.by_name[sym.name].append(sym.symbol_id)
            self.by_qualname[sym.qualname].append(sym.symbol_id)
        self.chunks_by_path: dict[str, list[Chunk]] = defaultdict(list)
        for chunk in chunks:
            self.chunks_by_path[chunk.path].append(chunk)
        self.paths = sorted(self.chunks_by_path)

    @staticmethod
    def from_snapshot(snapshot: Snapshot) -> SnapshotGraph:
        return SnapshotGraph(snapshot.repo, snapshot.symbols, snapshot.edges, snapshot.chunks)

    # -- names --

    def lookup(self, name: str) -> list[str]:
        """Node ids `name` can mean: exact `path::qual`, qualname, `module.qual`, then bare name;
        case as written first, case-insensitively only when nothing matches."""
        for fold in (False, True):
            found = self._lookup(name, fold)
            if found:
                return sorted(found)
        return []

    def _lookup(self, name: str, fold: bool) -> list[str]:
        def same(a: str, b: str) -> bool:
            return a.lower() == b.lower() if fold else a == b

        if not fold:
            if "::" in name:
                return [name] if name in self.symbols else []
            if name in self.by_qualname:
                return list(self.by_qualname[name])
            if "." not in name:
                return list(self.by_name.get(name, []))
        if "::" in name:
            return [s for s in self.symbols if same(s, name)]
        exact = [s for q, ids in self.by_qualname.items() if same(q, name) for s in ids]
        if exact:
            return exact
        if "." in name:  # module.qual (any split point; a module may be written by its tail)
            return [s.symbol_id for s in self.symbols.values()
                    if same(f"{s.module}.{s.qualname}", name) or same(f"{s.module}.{s.qualname}"[-len(name) - 1:],
                                                                      "." + name)]
        return [s for n, ids in self.by_name.items() if same(n, name) for s in ids]

    def lookup_module(self, name: str) -> list[str]:
        """File node ids for a module written dotted (`pkg.mod`, its tail) or as a path."""
        wanted = name.removeprefix(_FILE_PREFIX)
        found = [p for p in self.paths if p == wanted or module_of(p) == wanted or module_of(p).endswith("." + wanted)]
        return [file_node_id(p) for p in found]

    # -- citations --

    def chunk_at(self, path: str, line: int, owner: str) -> str:
        """The chunk holding `line`, preferring the owner symbol's own chunk, then the smallest."""
        qual = owner.split("::", 1)[1] if "::" in owner else ""
        holding = [c for c in self.chunks_by_path.get(path, []) if c.start_line <= line <= c.end_line]
        if not holding:
            return ""
        best: Chunk = min(holding, key=lambda c: (c.symbol != qual, c.end_line - c.start_line, c.start_line))
        return best.chunk_id

    def node_answer(self, node: str, line: int, resolution: str, depth: int, target: str, cite_path: str = "",
                    cite_owner: str = "", lines: list[int] | None = None) -> GraphAnswer:
        sym = self.symbols.get(node)
        path = sym.path if sym else node.removeprefix(_FILE_PREFIX).split("::", 1)[0]
        cite_path = cite_path or path
        return GraphAnswer(
            repo=self.repo, node=node, qualname=sym.qualname if sym else "", path=path, line=line,
            citation=f"{cite_path}:{line}", chunk_id=self.chunk_at(cite_path, line, cite_owner or node),
            resolution=resolution, depth=depth, target=target, kind=sym.kind if sym else "module",
            sites=[f"{cite_path}:{n}" for n in (lines or [line])],
        )


class GraphOps:
    """The structural ops over the searched snapshots (one cached `SnapshotGraph` per snapshot)."""

    def __init__(self) -> None:
        self._graphs: dict[str, SnapshotGraph] = {}
        self._lock = threading.Lock()

    def graph(self, snapshot: Snapshot) -> SnapshotGraph:
        key = f"{snapshot.repo}\x00{snapshot.snapshot_id}"
        with self._lock:
            if key not in self._graphs:
                self._graphs = {k: g for k, g in self._graphs.items() if not k.startswith(snapshot.repo + "\x00")}
                self._graphs[key] = SnapshotGraph.from_snapshot(snapshot)
            return self._graphs[key]

    def run(self, op: GraphOp, name: str, snapshots: list[Snapshot], depth: int = 1) -> GraphResult:
        """Answer `op` for every symbol `name` can mean; UnknownNameError when it means none."""
        return self.run_graphs(op, name, [self.graph(s) for s in snapshots], depth)

    def run_graphs(self, op: GraphOp, name: str, graphs: list[SnapshotGraph], depth: int = 1) -> GraphResult:
        result = GraphResult(op=op.value, name=name, candidates=[])
        for g in graphs:
            module_op = op in (GraphOp.IMPORTS, GraphOp.IMPORTERS)
            targets = (g.lookup_module(name) or g.lookup(name)) if module_op else g.lookup(name)
            result.candidates.extend(f"{g.repo}:{t}" for t in targets)
            for target in targets:
                result.answers.extend(self._answer(g, op, target, max(1, depth), result))
        if not result.candidates:
            raise UnknownNameError(f"no symbol or module named {name!r} in {', '.join(g.repo for g in graphs) or 'no repos'}")
        seen: set[tuple[str, str, str]] = set()
        unique = []
        for a in sorted(result.answers, key=lambda a: (a.depth, a.tier, a.path, a.line, a.node)):
            key = (a.repo, a.node, a.target)
            if key not in seen:
                seen.add(key)
                unique.append(a)
        result.answers = unique
        return result

    def _answer(self, g: SnapshotGraph, op: GraphOp, target: str, depth: int, result: GraphResult) -> list[GraphAnswer]:
        if op == GraphOp.DEFS:
            sym = g.symbols.get(target)
            if sym is None:
                return [g.node_answer(target, 1, Resolution.SYNTAX.value, 0, target)]
            return [GraphAnswer(g.repo, target, sym.qualname, sym.path, sym.start_line,
                                f"{sym.path}:{sym.start_line}-{sym.end_line}", sym.chunk_id, Resolution.SYNTAX.value,
                                0, target, sym.kind)]
        if op == GraphOp.CALLERS:
            return self._walk(g, self._call_targets(g, target), depth, target, incoming=True,
                              types=(EdgeType.CALLS.value,))
        if op == GraphOp.CALLEES:
            answers = self._walk(g, [target], depth, target, incoming=False, types=(EdgeType.CALLS.value,))
            result.unresolved.extend(sorted({e.dst.removeprefix("name:") for e in g.outgoing.get(target, [])
                                             if e.type == EdgeType.CALLS.value and not e.resolved}))
            return answers
        if op == GraphOp.REFS:
            return self._walk(g, self._call_targets(g, target), 1, target, incoming=True, types=_USE_TYPES)
        if op == GraphOp.IMPORTERS:
            return self._walk(g, [target], depth, target, incoming=True, types=(EdgeType.IMPORTS.value,))
        if op == GraphOp.IMPORTS:
            node = target if target.startswith(_FILE_PREFIX) else file_node_id(target.split("::", 1)[0])
            result.unresolved.extend(sorted({e.dst.removeprefix("name:") for e in g.outgoing.get(node, [])
                                             if e.type == EdgeType.IMPORTS.value and not e.resolved}))
            return self._walk(g, [node], 1, target, incoming=False, types=(EdgeType.IMPORTS.value,))
        return self._impls(g, target, depth)

    @staticmethod
    def _call_targets(g: SnapshotGraph, target: str) -> list[str]:
        """A class is called through its constructor: callers of `C` include callers of `C.__init__`."""
        sym = g.symbols.get(target)
        init = f"{target}.{PYTHON_INIT}"
        return [target, init] if sym is not None and sym.kind == SymbolKind.CLASS.value and init in g.symbols \
            else [target]

    @staticmethod
    def _walk(g: SnapshotGraph, starts: list[str], depth: int, target: str, incoming: bool,
              types: tuple[str, ...]) -> list[GraphAnswer]:
        """Breadth-first over `types` edges up to `depth` hops; each node once, at its shallowest."""
        answers: list[GraphAnswer] = []
        seen = set(starts)
        frontier = list(starts)
        for level in range(1, depth + 1):
            nxt: list[str] = []
            here: dict[str, GraphAnswer] = {}  # answers of this level: a second edge adds its sites
            for node in frontier:
                edges = g.incoming.get(node, []) if incoming else g.outgoing.get(node, [])
                for e in sorted(edges, key=lambda e: (e.path, e.line)):
                    if e.type not in types or not e.resolved:
                        continue
                    other = e.src if incoming else e.dst
                    if other in seen:
                        if incoming and other in here:  # a caller of both C and C.__init__: every call line
                            known = here[other].sites
                            known.extend(s for s in (f"{e.path}:{n}" for n in e.sites) if s not in known)
                        continue
                    seen.add(other)
                    nxt.append(other)
                    how = e.resolution or Resolution.NAME.value
                    if incoming:  # cite the call sites: the caller's chunk at the (first) call line
                        answer = g.node_answer(other, e.line, how, level, target, e.path, other, e.sites)
                    else:  # cite the callee's definition; `sites` are the call lines in the caller
                        sym = g.symbols.get(other)
                        answer = g.node_answer(other, sym.start_line if sym else e.line, how, level, target)
                        answer.sites = [f"{e.path}:{n}" for n in e.sites]
                    here[other] = answer
                    answers.append(answer)
            frontier = nxt
            if not frontier:
                break
        return answers

    @staticmethod
    def _impls(g: SnapshotGraph, target: str, depth: int) -> list[GraphAnswer]:
        """Subclasses of a class (transitive to `depth`), or the overrides of a method in them."""
        sym = g.symbols.get(target)
        if sym is None:
            return []
        is_method = sym.kind == SymbolKind.METHOD.value and sym.parent in g.symbols
        cls = sym.parent if is_method else target
        answers: list[GraphAnswer] = []
        seen, frontier = {cls}, [cls]
        for level in range(1, depth + 1):
            nxt = []
            for node in frontier:
                for e in g.incoming.get(node, []):
                    if e.type != EdgeType.INHERITS.value or e.src in seen:
                        continue
                    seen.add(e.src)
                    nxt.append(e.src)
                    if is_method:
                        override = f"{e.src}.{sym.name}"
                        if override in g.symbols:
                            o = g.symbols[override]
                            answers.append(g.node_answer(override, o.start_line, Resolution.INHERITANCE.value, level,
                                                         target))
                    else:
                        answers.append(g.node_answer(e.src, e.line, e.resolution or Resolution.NAME.value, level,
                                                     target))
            frontier = nxt
        return answers

"""Multi-hop: from the first hits, follow definitions -> uses over the code graph.

A question that needs two steps ("what breaks when the parser rejects a header" — the answer is the
caller of the function that matches the words) is not answered by any one retriever: the first hits
find the definition the words describe, the answer is one edge away. `MultiHop.neighbours` walks
`depth` hops from the symbols of the seed chunks, along

- `uses`: who calls, references or subclasses the seed (incoming CALLS / REFERENCES / INHERITS;
  a class is also used through its `__init__`), cited at the using chunk;
- `definitions`: what the seed calls, references or inherits (outgoing edges), at the definition's chunk,

and returns the reached chunks as one ranked list (closer to a better seed first) that
`ListMerger` fuses like any other list. Only resolved edges are followed; each seed contributes at
most `max_per_seed` nodes, the list at most `max_nodes`.
"""

from __future__ import annotations

import threading
from collections import defaultdict

from semantica.config import MultiHopConfig
from semantica.hits import RankedList
from semantica.schema import EdgeType, ParsableEnum, SymbolKind
from serving.core.intent import Intent, IntentResult
from serving.graph.ops import PYTHON_INIT, SnapshotGraph

USE_TYPES = frozenset({EdgeType.CALLS.value, EdgeType.REFERENCES.value, EdgeType.INHERITS.value})
MAX_CHUNK_MAPS = 16


class HopDirection(ParsableEnum):
    """Which way an edge is followed from a seed."""

    USES = "uses"
    DEFINITIONS = "definitions"


class HopTrigger(ParsableEnum):
    """When multi-hop runs: always, for flow questions, or for issue-length (decomposed) queries."""

    ALWAYS = "always"
    FLOW = "flow"
    ISSUE = "issue"


class MultiHop:
    """`neighbours(graph, seed_chunk_ids)` -> the chunks one or more edges away, ranked."""

    def __init__(self, config: MultiHopConfig) -> None:
        self.config = config
        self.directions = [HopDirection.parse(d) for d in config.directions]
        self.triggers = {HopTrigger.parse(t) for t in config.triggers}
        if config.depth < 1:
            raise ValueError(f"planning.multihop.depth must be >= 1, got {config.depth}")
        self._maps: dict[int, tuple[SnapshotGraph, dict[str, list[str]]]] = {}
        self._lock = threading.Lock()

    def wanted(self, intent: IntentResult, decomposed: bool) -> bool:
        if not self.config.enabled:
            return False
        return (HopTrigger.ALWAYS in self.triggers
                or (HopTrigger.FLOW in self.triggers and intent.dominant is Intent.FLOW)
                or (HopTrigger.ISSUE in self.triggers and decomposed))

    def _symbols_of(self, graph: SnapshotGraph) -> dict[str, list[str]]:
        """chunk id -> the symbols defined in it (built once per snapshot graph)."""
        with self._lock:
            held = self._maps.get(id(graph))
            if held is None or held[0] is not graph:
                if len(self._maps) >= MAX_CHUNK_MAPS:
                    self._maps.clear()
                table: dict[str, list[str]] = defaultdict(list)
                for symbol_id, sym in graph.symbols.items():
                    if sym.chunk_id:
                        table[sym.chunk_id].append(symbol_id)
                held = self._maps[id(graph)] = (graph, dict(table))
            return held[1]

    def neighbours(self, graph: SnapshotGraph, seeds: list[str]) -> RankedList:
        symbols_of = self._symbols_of(graph)
        score: dict[str, float] = {}
        order: dict[str, int] = {}
        for position, chunk_id in enumerate(seeds[: self.config.seeds], 1):
            reached = self._walk(graph, symbols_of.get(chunk_id, []))
            for node_chunk, depth in reached[: self.config.max_per_seed]:
                if node_chunk == chunk_id:  # another seed may be reached: adjacency to a first hit counts
                    continue
                score[node_chunk] = score.get(node_chunk, 0.0) + 1.0 / (position * depth)
                order.setdefault(node_chunk, len(order))
        best = sorted(score, key=lambda c: (-score[c], order[c]))[: self.config.max_nodes]
        return [(chunk_id, rank) for rank, chunk_id in enumerate(best, 1)]

    def _walk(self, graph: SnapshotGraph, starts: list[str]) -> list[tuple[str, int]]:
        """(chunk id, depth) of the nodes reached from `starts`, breadth-first, each chunk once."""
        reached: list[tuple[str, int]] = []
        frontier = [node for start in starts for node in _with_init(graph, start)]
        seen_nodes = set(frontier)
        seen_chunks: set[str] = set()
        for depth in range(1, self.config.depth + 1):
            nxt: list[str] = []
            for node in frontier:
                for direction in self.directions:
                    for other, chunk_id in self._step(graph, node, direction):
                        if other in seen_nodes:
                            continue
                        seen_nodes.add(other)
                        nxt.append(other)
                        if chunk_id and chunk_id not in seen_chunks:
                            seen_chunks.add(chunk_id)
                            reached.append((chunk_id, depth))
            frontier = nxt
            if not frontier:
                break
        return reached

    @staticmethod
    def _step(graph: SnapshotGraph, node: str, direction: HopDirection) -> list[tuple[str, str]]:
        """(neighbour node, its chunk) one resolved use-edge away."""
        out: list[tuple[str, str]] = []
        if direction is HopDirection.USES:
            for e in sorted(graph.incoming.get(node, []), key=lambda e: (e.path, e.line)):
                if e.type in USE_TYPES and e.resolved:
                    out.append((e.src, graph.chunk_at(e.path, e.line, e.src)))
        else:
            for e in sorted(graph.outgoing.get(node, []), key=lambda e: (e.path, e.line)):
                if e.type in USE_TYPES and e.resolved:
                    sym = graph.symbols.get(e.dst)
                    out.append((e.dst, sym.chunk_id if sym else ""))
        return out


def _with_init(graph: SnapshotGraph, symbol_id: str) -> list[str]:
    """A class is used through its constructor too."""
    sym = graph.symbols.get(symbol_id)
    init = f"{symbol_id}.{PYTHON_INIT}"
    if sym is not None and sym.kind == SymbolKind.CLASS.value and init in graph.symbols:
        return [symbol_id, init]
    return [symbol_id]

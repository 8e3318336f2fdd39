"""Embedded code-graph store: an in-process CSR over `edges.parquet` (numpy arrays).

Cost-bounded multi-source Dijkstra gives the neighbourhood of seed symbols; PageRank over the same
graph is the prior computed at index time (scipy.sparse). Measured 10-100x faster here than embedded Cypher
engines on one machine; Memgraph implements the same `GraphStore` protocol.

The walk is Python's heapq over the CSR arrays, not scipy's csgraph: it stops once the `max_nodes` nearest are
settled (csgraph walks every node within the cost limit), and a query process need not import scipy.sparse
(a fifth of a second, on a cold CLI's critical path). It gives csgraph's distances exactly: each is the same
minimum over the same sums (`tests/semantica/stores/test_graph.py` compares them).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from semantica.schema import Edge

GRAPH_STORE_EMBEDDED = "embedded"
GRAPH_STORE_MEMGRAPH = "memgraph"
_PAGERANK_ITERATIONS = 50
_PAGERANK_TOLERANCE = 1e-8
PENALTY_KEYS = 8  # penalty mappings whose sorted key is kept (one per retriever in practice)


@dataclass
class Adjacency:
    """One cost profile's edges as CSR: node i's out-edges are `targets[starts[i]:starts[i + 1]]` with `costs`."""

    starts: np.ndarray
    targets: np.ndarray
    costs: np.ndarray


@dataclass
class Expansion:
    """Node -> cost of the cheapest path from any seed."""

    costs: dict[str, float]


class GraphStore(Protocol):
    """What the graph retriever needs from a graph backend."""

    def expand(self, seeds: Sequence[str], edge_costs: dict[str, float], max_cost: float, max_nodes: int,
               both_directions: bool, node_penalty: dict[str, float] | None = None,
               reverse: bool = False) -> Expansion:
        """Cheapest cost from any seed to each reached node. `reverse` walks edges backwards
        (callers of a seed); `both_directions` walks both ways."""
        ...

    def pagerank(self) -> dict[str, float]: ...


class CsrGraphStore:
    """All resolved edges of one snapshot as weighted CSR matrices, built once per snapshot."""

    def __init__(self, edges: Iterable[Edge], extra_nodes: Iterable[str] = ()) -> None:
        resolved = [e for e in edges if e.resolved and e.src != e.dst]
        names = sorted({*extra_nodes, *(e.src for e in resolved), *(e.dst for e in resolved)})
        self.nodes = names
        self.index = {n: i for i, n in enumerate(names)}
        self.src = np.array([self.index[e.src] for e in resolved], dtype=np.int64)
        self.dst = np.array([self.index[e.dst] for e in resolved], dtype=np.int64)
        self.types = np.array([e.type for e in resolved], dtype=object)
        self._adjacencies: dict[tuple, Adjacency] = {}
        self._penalty_keys: dict[int, tuple[dict[str, float], tuple]] = {}

    def __len__(self) -> int:
        return len(self.nodes)

    def _penalty_key(self, node_penalty: dict[str, float] | None) -> tuple:
        """A penalty mapping's part of the adjacency key, sorted once per mapping object: a retriever passes the same
        one (every test node) on each query, and sorting it each time cost a large repository 30 ms a walk. A
        mapping must not change once walked with."""
        if not node_penalty:
            return ()
        known = self._penalty_keys.get(id(node_penalty))
        if known is None or known[0] is not node_penalty:
            if len(self._penalty_keys) >= PENALTY_KEYS:
                self._penalty_keys.clear()
            known = self._penalty_keys[id(node_penalty)] = (node_penalty, tuple(sorted(node_penalty.items())))
        return known[1]

    def _adjacency(self, edge_costs: dict[str, float], both_directions: bool,
                   node_penalty: dict[str, float] | None, reverse: bool) -> Adjacency:
        n = len(self.nodes)
        cost = np.array([edge_costs.get(t, np.inf) for t in self.types], dtype=np.float64)
        keep = np.isfinite(cost)
        src, dst, cost = self.src[keep], self.dst[keep], cost[keep]
        if reverse:
            src, dst = dst, src
        if both_directions:
            src, dst, cost = np.concatenate([src, dst]), np.concatenate([dst, src]), np.concatenate([cost, cost])
        if node_penalty:
            factor = np.ones(n)
            for node, penalty in node_penalty.items():
                if node in self.index:
                    factor[self.index[node]] = penalty
            cost = cost * factor[dst]
        # a repeated (src, dst) pair keeps its cheapest edge
        order = np.lexsort((cost, dst, src))
        src, dst, cost = src[order], dst[order], cost[order]
        first = np.ones(len(src), dtype=bool)
        first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
        src, dst, cost = src[first], dst[first], cost[first]
        return Adjacency(np.searchsorted(src, np.arange(n + 1)), dst, cost)

    def expand(self, seeds: Sequence[str], edge_costs: dict[str, float], max_cost: float, max_nodes: int,
               both_directions: bool, node_penalty: dict[str, float] | None = None,
               reverse: bool = False) -> Expansion:
        seed_ids = sorted({self.index[s] for s in seeds if s in self.index})
        if not seed_ids or not len(self.nodes):
            return Expansion({})
        key = (tuple(sorted(edge_costs.items())), both_directions, reverse, self._penalty_key(node_penalty))
        adjacency = self._adjacencies.get(key)
        if adjacency is None:  # one adjacency per cost profile: queries reuse it
            adjacency = self._adjacencies[key] = self._adjacency(edge_costs, both_directions, node_penalty, reverse)
        return Expansion({self.nodes[i]: distance for i, distance in _nearest(adjacency, seed_ids, max_cost, max_nodes)})

    def pagerank(self, damping: float = 0.85) -> dict[str, float]:
        """PageRank over all resolved edges (unweighted), as a prior for graph scores."""
        n = len(self.nodes)
        if n == 0:
            return {}
        out_degree = np.bincount(self.src, minlength=n).astype(np.float64)
        weights = 1.0 / out_degree[self.src] if len(self.src) else np.zeros(0)
        from scipy.sparse import csr_matrix  # index time only: a query process never imports scipy.sparse

        transition = csr_matrix((weights, (self.dst, self.src)), shape=(n, n))
        rank = np.full(n, 1.0 / n)
        dangling = out_degree == 0
        for _ in range(_PAGERANK_ITERATIONS):
            new = damping * (transition @ rank + rank[dangling].sum() / n) + (1 - damping) / n
            if np.abs(new - rank).sum() < _PAGERANK_TOLERANCE:
                rank = new
                break
            rank = new
        return {node: float(score) for node, score in zip(self.nodes, rank)}


def _nearest(adjacency: Adjacency, seeds: list[int], max_cost: float, max_nodes: int) -> list[tuple[int, float]]:
    """The `max_nodes` nodes nearest to any seed within `max_cost` (a path of exactly `max_cost` counts), as
    (node, distance) by distance then node: multi-source Dijkstra, stopped once no node left in the heap can
    enter that list."""
    starts, targets, costs = adjacency.starts, adjacency.targets, adjacency.costs
    best = {seed: 0.0 for seed in seeds}
    heap = [(0.0, seed) for seed in seeds]
    settled: dict[int, float] = {}
    cut = np.inf  # the max_nodes-th settled distance: a farther node cannot enter the list
    while heap:
        distance, node = heapq.heappop(heap)
        if distance > cut:
            break
        if node in settled:
            continue
        settled[node] = distance
        if len(settled) == max_nodes:
            cut = distance
        lo, hi = starts[node], starts[node + 1]
        for target, cost in zip(targets[lo:hi].tolist(), costs[lo:hi].tolist()):
            reached = distance + cost
            if reached <= max_cost and target not in settled and reached < best.get(target, np.inf):
                best[target] = reached
                heapq.heappush(heap, (reached, target))
    return sorted(settled.items(), key=lambda item: (item[1], item[0]))[:max_nodes]

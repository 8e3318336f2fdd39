"""Embedded code-graph store: an in-process CSR over `edges.parquet` (scipy.sparse + csgraph).

Cost-bounded multi-source Dijkstra gives the neighbourhood of seed symbols; PageRank over the same
graph is the prior computed at index time. Measured 10-100x faster here than embedded Cypher
engines on one machine; Memgraph implements the same `GraphStore` protocol.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from semantica.schema import Edge

if TYPE_CHECKING:
    from scipy.sparse import csr_matrix

GRAPH_STORE_EMBEDDED = "embedded"
GRAPH_STORE_MEMGRAPH = "memgraph"
_PAGERANK_ITERATIONS = 50
_PAGERANK_TOLERANCE = 1e-8


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
        self._matrices: dict[tuple, csr_matrix] = {}
        # scipy.sparse takes a fifth of a second to import: it loads with the store (a cold query's prefetch
        # thread opens it), not with this module, which every query process imports before its loads start
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import dijkstra

        self._csr_matrix, self._dijkstra = csr_matrix, dijkstra

    def __len__(self) -> int:
        return len(self.nodes)

    def _matrix(self, edge_costs: dict[str, float], both_directions: bool,
                node_penalty: dict[str, float] | None, reverse: bool) -> csr_matrix:
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
        # duplicate (src, dst) pairs are summed by csr_matrix; keep the cheapest instead
        order = np.lexsort((cost, dst, src))
        src, dst, cost = src[order], dst[order], cost[order]
        first = np.ones(len(src), dtype=bool)
        first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
        return self._csr_matrix((cost[first], (src[first], dst[first])), shape=(n, n))

    def expand(self, seeds: Sequence[str], edge_costs: dict[str, float], max_cost: float, max_nodes: int,
               both_directions: bool, node_penalty: dict[str, float] | None = None,
               reverse: bool = False) -> Expansion:
        seed_ids = sorted({self.index[s] for s in seeds if s in self.index})
        if not seed_ids or not len(self.nodes):
            return Expansion({})
        key = (tuple(sorted(edge_costs.items())), both_directions, reverse,
               tuple(sorted((node_penalty or {}).items())))
        matrix = self._matrices.get(key)
        if matrix is None:  # one matrix per cost profile: queries reuse it
            matrix = self._matrices[key] = self._matrix(edge_costs, both_directions, node_penalty, reverse)
        distances = self._dijkstra(matrix, directed=True, indices=seed_ids, limit=max_cost, min_only=True)
        reached = np.flatnonzero(np.isfinite(distances))
        reached = reached[np.argsort(distances[reached], kind="stable")][:max_nodes]
        return Expansion({self.nodes[i]: float(distances[i]) for i in reached})

    def pagerank(self, damping: float = 0.85) -> dict[str, float]:
        """PageRank over all resolved edges (unweighted), as a prior for graph scores."""
        n = len(self.nodes)
        if n == 0:
            return {}
        out_degree = np.bincount(self.src, minlength=n).astype(np.float64)
        weights = 1.0 / out_degree[self.src] if len(self.src) else np.zeros(0)
        transition = self._csr_matrix((weights, (self.dst, self.src)), shape=(n, n))
        rank = np.full(n, 1.0 / n)
        dangling = out_degree == 0
        for _ in range(_PAGERANK_ITERATIONS):
            new = damping * (transition @ rank + rank[dangling].sum() / n) + (1 - damping) / n
            if np.abs(new - rank).sum() < _PAGERANK_TOLERANCE:
                rank = new
                break
            rank = new
        return {node: float(score) for node, score in zip(self.nodes, rank)}

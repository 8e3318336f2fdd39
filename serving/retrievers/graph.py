"""Graph retrieval: cost-aware multi-source Dijkstra from seed hits over the code graph.

Seeds are the chunks the symbol and lexical retrievers found. Edge costs per type come from conf
(CALLS 1.0 ... TESTS 2.5); flow queries walk both directions ("who calls X" reaches X's callers)
with cheaper edges and a larger budget; test/mock paths cost more. A reached node scores
(1 - w) * exp(-cost) + w * PageRank/max(PageRank).
"""

from __future__ import annotations

import math
from collections import defaultdict

from semantica.config import GraphConfig
from semantica.languages import is_test_path
from semantica.runtime import linear_regex
from semantica.schema import Chunk, Symbol, file_node_id
from semantica.stores.graph import GraphStore
from serving.core.intent import Intent
from serving.retrievers.base import BaseRetriever, RetrievalQuery, ScoredList

CALLERS_PHRASE = linear_regex.compile(r"(?i)\b(who|what|which)\s+(calls|uses|invokes)\b|\bcallers?\s+of\b|\b(called|used|invoked)\s+by\b")
CALLEES_PHRASE = linear_regex.compile(r"(?i)\bwhat\s+does\s+\S+\s+call\b|\bcallees?\s+of\b")

# the walk's constants (the RFC's values, not per-deployment settings; conf `graph` keeps costs, caps and seeds)
TEST_PATH_PENALTY = 1.5  # reaching a test/mock file's node costs this much more
DIRECTED_SEEDS = 2  # a "who calls X" / "what does X call" query walks from this many symbol seeds
FLOW_COST_SCALE = 0.8  # a flow query's edges cost this fraction ...
FLOW_BUDGET_SCALE = 1.5  # ... and its walk may go this much further (x graph.max_cost)
PAGERANK_WEIGHT = 0.2  # a reached node scores (1 - w) * exp(-cost) + w * PageRank/max(PageRank), w this


class GraphRetriever(BaseRetriever):
    """Neighbourhood of the seeds, scored by path cost and a PageRank prior."""

    name = "graph"  # its registry name

    def __init__(self, store: GraphStore, symbols: list[Symbol], chunks: list[Chunk],
                 pagerank: dict[str, float], config: GraphConfig) -> None:
        super().__init__({c.chunk_id: c for c in chunks})
        self.store = store
        self.config = config
        self.node_of_chunk: dict[str, str] = {}
        self.chunk_of_node: dict[str, str] = {}
        for chunk in chunks:  # a file node maps to its first chunk (module header)
            self.chunk_of_node.setdefault(file_node_id(chunk.path), chunk.chunk_id)
            self.node_of_chunk.setdefault(chunk.chunk_id, file_node_id(chunk.path))
        for symbol in symbols:
            if symbol.chunk_id:
                self.chunk_of_node[symbol.symbol_id] = symbol.chunk_id
                self.node_of_chunk[symbol.chunk_id] = symbol.symbol_id
        top = max(pagerank.values(), default=0.0)
        self.prior = {n: v / top for n, v in pagerank.items()} if top > 0 else {}
        self.penalty = {node: TEST_PATH_PENALTY for node in self.chunk_of_node
                        if is_test_path(node.split("::", 1)[0].removeprefix("file:"))}

    def _search(self, query: RetrievalQuery, k: int) -> ScoredList:
        flow = query.intent is not None and query.intent.dominant == Intent.FLOW
        callers = flow and bool(CALLERS_PHRASE.search(query.text))
        callees = flow and bool(CALLEES_PHRASE.search(query.text))
        directed = (callers or callees) and bool(query.symbol_seeds)
        seed_chunks = query.symbol_seeds[:DIRECTED_SEEDS] if directed else query.seeds[: self.config.seeds]
        seeds = [self.node_of_chunk[c] for c in seed_chunks if c in self.node_of_chunk]
        if not seeds:
            return []
        cost_scale = FLOW_COST_SCALE if flow else 1.0
        budget_scale = FLOW_BUDGET_SCALE if flow else 1.0
        costs = {t: c * cost_scale for t, c in self.config.edge_costs.items()}
        expansion = self.store.expand(seeds, costs, self.config.max_cost * budget_scale, self.config.max_nodes,
                                      both_directions=flow and not (callers or callees), node_penalty=self.penalty,
                                      reverse=callers)
        weight = PAGERANK_WEIGHT
        best: dict[str, float] = defaultdict(float)
        skip = set(seeds) if (callers or callees) else set()  # "who calls X": X's neighbours, not X itself
        for node, cost in expansion.costs.items():
            chunk_id = self.chunk_of_node.get(node)
            if chunk_id is None or node in skip:
                continue
            score = (1 - weight) * math.exp(-cost) + weight * self.prior.get(node, 0.0)
            best[chunk_id] = max(best[chunk_id], score)
        return sorted(best.items(), key=lambda item: (-item[1], item[0]))[:k]

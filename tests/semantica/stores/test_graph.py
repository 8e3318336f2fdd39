import pytest

from semantica.schema import Edge
from semantica.stores.graph import CsrGraphStore

COSTS = {"CALLS": 1.0, "INHERITS": 1.25, "CONTAINS": 1.7, "IMPORTS": 2.0}


def edge(src, dst, kind="CALLS", resolved=True):
    return Edge(src=src, dst=dst, type=kind, repo="r", path="p.py", line=1, resolved=resolved)


@pytest.fixture()
def store():
    return CsrGraphStore([
        edge("a", "b"), edge("b", "c"), edge("c", "d"), edge("a", "x", "IMPORTS"), edge("x", "c"),
        edge("m", "a"), edge("n", "a"), edge("a", "ghost", resolved=False), edge("k", "c", "TESTS"),
    ], extra_nodes=["lonely"])


def test_forward_costs_are_cheapest_paths(store):
    costs = store.expand(["a"], COSTS, max_cost=10, max_nodes=50, both_directions=False).costs
    assert costs == {"a": 0.0, "b": 1.0, "c": 2.0, "x": 2.0, "d": 3.0}
    assert "ghost" not in store.index  # unresolved edges never enter the graph


def test_budget_and_node_cap(store):
    assert set(store.expand(["a"], COSTS, max_cost=1.5, max_nodes=50, both_directions=False).costs) == {"a", "b"}
    assert len(store.expand(["a"], COSTS, max_cost=10, max_nodes=2, both_directions=False).costs) == 2


def test_reverse_walks_callers_and_both_walks_everything(store):
    callers = store.expand(["a"], COSTS, max_cost=1.0, max_nodes=50, both_directions=False, reverse=True).costs
    assert callers == {"a": 0.0, "m": 1.0, "n": 1.0}
    both = store.expand(["b"], COSTS, max_cost=1.0, max_nodes=50, both_directions=True).costs
    assert both == {"b": 0.0, "a": 1.0, "c": 1.0}


def test_unknown_edge_types_are_not_walked_and_penalties_apply(store):
    costs = store.expand(["k"], COSTS, max_cost=10, max_nodes=50, both_directions=False).costs
    assert costs == {"k": 0.0}
    penalised = store.expand(["a"], COSTS, max_cost=10, max_nodes=50, both_directions=False,
                             node_penalty={"b": 3.0}).costs
    assert penalised["b"] == 3.0 and penalised["c"] == 3.0  # via x now: 2.0 + 1.0


def test_unknown_seeds_give_nothing(store):
    assert store.expand(["nope"], COSTS, 10, 50, False).costs == {}


def test_pagerank_is_a_distribution_favouring_hubs(store):
    ranks = store.pagerank(0.85)
    assert sum(ranks.values()) == pytest.approx(1.0, abs=1e-6)
    assert ranks["c"] > ranks["b"] > ranks["m"] and ranks["lonely"] > 0
    assert CsrGraphStore([]).pagerank() == {}


def _csgraph_expansion(store, seeds, edge_costs, max_cost, max_nodes, both, penalty, reverse):
    """What scipy's csgraph Dijkstra gives over the same edges: the reference the heap walk must equal."""
    import numpy as np
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    cheapest: dict[tuple[int, int], float] = {}  # built from the store's edges here, not from its adjacency
    for src, dst, kind in zip(store.src.tolist(), store.dst.tolist(), store.types.tolist()):
        cost = edge_costs.get(kind)
        if cost is None:
            continue
        pairs = [(dst, src)] if reverse else [(src, dst)]
        if both:
            pairs = [(src, dst), (dst, src)]
        for a, b in pairs:
            weighted = cost * (penalty or {}).get(store.nodes[b], 1.0)
            cheapest[(a, b)] = min(weighted, cheapest.get((a, b), np.inf))
    n = len(store.nodes)
    rows, cols = [a for a, _ in cheapest], [b for _, b in cheapest]
    matrix = csr_matrix((list(cheapest.values()), (rows, cols)), shape=(n, n))
    ids = sorted({store.index[s] for s in seeds})
    distances = dijkstra(matrix, directed=True, indices=ids, limit=max_cost, min_only=True)
    reached = np.flatnonzero(np.isfinite(distances))
    reached = reached[np.argsort(distances[reached], kind="stable")][:max_nodes]
    return {store.nodes[i]: float(distances[i]) for i in reached}


def test_the_heap_walk_equals_csgraph_on_this_repository_s_own_graph(indexed_self):
    """Every distance, member and tie order of the bounded walk against scipy's csgraph, over the resolved code
    graph of this repository's indexed files, for many seeds, cost limits, caps, directions and penalties."""
    import random

    from semantica.layout import IndexLayout
    from semantica.snapshot import Snapshot

    config = indexed_self.config
    store = Snapshot.open(IndexLayout(config.paths.index_root).current(indexed_self.name), config).graph_store
    assert len(store) > 500 and len(store.src) > 1000
    rng = random.Random(5)
    costs = dict(config.graph.edge_costs)
    for trial in range(80):
        seeds = rng.sample(store.nodes, rng.choice([1, 2, 5]))
        max_cost, max_nodes = rng.choice([1.0, 2.5, 4.0, 10.0]), rng.choice([1, 3, 20, 200])
        both, reverse = rng.random() < 0.3, rng.random() < 0.3
        penalty = {rng.choice(store.nodes): 3.0} if trial % 4 == 0 else None
        ours = store.expand(seeds, costs, max_cost, max_nodes, both, penalty, reverse).costs
        reference = _csgraph_expansion(store, seeds, costs, max_cost, max_nodes, both, penalty, reverse)
        assert list(ours.items()) == list(reference.items()), (trial, seeds)

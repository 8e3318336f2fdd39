"""Memgraph graph store: Cypher builders without a server; live tests only with MEMGRAPH_URI set."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from semantica.schema import Edge, Symbol
from semantica.stores.memgraph import (
    MemgraphError,
    MemgraphGraphStore,
    MemgraphLoader,
    batches,
    bfs_query,
    connect,
    cost_expression,
    edge_rows,
    edges_of_type_query,
    expand_query,
    merge_edges_query,
    merge_nodes_query,
    node_rows,
    pagerank_query,
)

MEMGRAPH_URI = os.environ.get("MEMGRAPH_URI", "")
COSTS = {"CALLS": 1.0, "IMPORTS": 2.0}


def _edge(src: str, dst: str, etype: str = "CALLS", resolved: bool = True) -> Edge:
    return Edge(src=src, dst=dst, type=etype, repo="r", path="a.py", line=1, resolved=resolved)


def test_cost_expression_lists_every_type_and_penalises_target():
    expr = cost_expression(COSTS)
    assert "WHEN 'CALLS' THEN 1.0" in expr and "WHEN 'IMPORTS' THEN 2.0" in expr
    assert "penalty_factor" in expr and expr.count("WHEN") == 2


def test_expand_query_is_weighted_shortest_and_directional():
    directed = expand_query(COSTS, both_directions=False)
    assert "*WSHORTEST (r, n |" in directed and "total" in directed and "]->(t:Node)" in directed
    assert "WHERE total <= $max_cost" in directed and "LIMIT $max_nodes" in directed
    assert "r.type IN ['CALLS', 'IMPORTS']" in directed
    undirected = expand_query(COSTS, both_directions=True)
    assert "]-(t:Node)" in undirected and "]->" not in undirected


def test_quotes_in_edge_types_are_escaped():
    assert "'it\\'s'" in cost_expression({"it's": 1.0})


def test_bfs_query_bounds_hops():
    assert "*BFS ..3" in bfs_query(3, both_directions=False)
    with pytest.raises(ValueError):
        bfs_query(0, both_directions=True)


def test_merge_statements_are_idempotent_and_tagged():
    for query in (merge_nodes_query(), merge_edges_query()):
        assert query.startswith("UNWIND $rows AS row") and "MERGE" in query
        assert "repo: $repo" in query and "snapshot: $snapshot" in query
    assert "pagerank.get()" in pagerank_query()


def test_rows_deduplicate_and_skip_unresolved_and_loops():
    edges = [_edge("a", "b"), _edge("a", "b"), _edge("a", "a"), _edge("a", "name:x", resolved=False)]
    assert edge_rows(edges) == [{"src": "a", "dst": "b", "type": "CALLS", "line": 1, "lines": [1], "resolution": ""}]
    sym = Symbol.__dataclass_fields__  # the Symbol schema is only needed for node ids here
    assert "symbol_id" in sym
    assert [r["id"] for r in node_rows([], [], edges)] == ["a", "b"]


def test_edge_rows_carry_every_call_line_and_the_resolution():
    edges = [Edge("a", "b", "CALLS", "r", "a.py", 3, resolution="type", lines=[3, 9]),
             Edge("a", "b", "CALLS", "r", "a.py", 12, resolution="type")]
    assert edge_rows(edges) == [{"src": "a", "dst": "b", "type": "CALLS", "line": 3, "lines": [3, 9, 12],
                                 "resolution": "type"}]
    assert "e.resolution = row.resolution" in merge_edges_query() and "e.lines = row.lines" in merge_edges_query()


def test_store_reads_edges_back_with_lines_and_resolution():
    client = FakeClient({"RETURN count(n)": [(1,)], "RETURN a.id, b.id": [("a", "b", "a.py", 3, [3, 9], "self")]})
    [edge] = MemgraphGraphStore(client, "r", "s1").edges("CALLS")
    assert (edge.src, edge.dst, edge.path, edge.line, edge.sites, edge.resolution) == ("a", "b", "a.py", 3, [3, 9], "self")
    query, params = client.calls[-1]
    assert query == edges_of_type_query() and params == {"repo": "r", "snapshot": "s1", "type": "CALLS"}


def test_batches():
    assert [len(b) for b in batches(list(range(5)), 2)] == [2, 2, 1]
    assert list(batches([], 3)) == []


class FakeClient:
    """Records statements; answers the few reads the store makes."""

    def __init__(self, answers: dict[str, list[tuple]] | None = None) -> None:
        self.calls: list[tuple[str, dict]] = []
        self.answers = answers or {}

    def execute(self, query: str, params: dict | None = None) -> list[tuple]:
        self.calls.append((query, params or {}))
        for marker, rows in self.answers.items():
            if marker in query:
                return rows
        return []

    def close(self) -> None:
        pass


def test_loader_batches_and_deletes_superseded():
    client = FakeClient({"DETACH DELETE": [(3,)]})
    edges = [_edge(f"n{i}", f"n{i + 1}") for i in range(5)]
    stats = MemgraphLoader(client, batch_size=2).load("r", "s2", [], [], edges)
    assert stats == {"nodes": 6, "edges": 5, "deleted": 3}
    merges = [p for q, p in client.calls if q == merge_nodes_query()]
    assert [len(p["rows"]) for p in merges] == [2, 2, 2] and all(p["snapshot"] == "s2" for p in merges)
    assert sum(1 for q, _ in client.calls if q == merge_edges_query()) == 3


def test_store_expand_merges_rows_and_seeds():
    client = FakeClient({"RETURN count(n)": [(1,)], "WSHORTEST": [("b", 1.0), ("c", 2.5)]})
    store = MemgraphGraphStore(client, "r", "s1")
    expansion = store.expand(["a"], COSTS, 4.0, 10, both_directions=False, node_penalty={"c": 1.5})
    assert expansion.costs == {"a": 0.0, "b": 1.0, "c": 2.5}
    assert store.expand([], COSTS, 4.0, 10, False).costs == {}


def test_store_never_loaded_raises_instead_of_answering_empty():
    """The index-batch path once skipped the Memgraph load; the graph retriever then answered [] silently."""
    store = MemgraphGraphStore(FakeClient({"RETURN count(n)": [(0,)]}), "r", "never-loaded")
    with pytest.raises(MemgraphError, match="not loaded"):
        store.expand(["a"], COSTS, 4.0, 10, both_directions=False)
    with pytest.raises(MemgraphError, match="not loaded"):
        store.pagerank()


def test_connect_without_uri_says_what_to_set():
    with pytest.raises(MemgraphError, match="memgraph_uri"):
        connect("")


@pytest.mark.skipif(not MEMGRAPH_URI, reason="SKIPPED: no Memgraph server (set MEMGRAPH_URI=bolt://host:7687 "
                    "and pip install '.[memgraph]' to run the live Memgraph tests)")
def test_live_load_expand_and_pagerank():
    client = connect(MEMGRAPH_URI)
    edges = [replace(e, resolution="type") for e in (_edge("a", "b"), _edge("b", "c"), _edge("c", "d", "IMPORTS"))]
    loader = MemgraphLoader(client)
    loader.load("test/repo", "s1", [], [], edges)
    loader.load("test/repo", "s1", [], [], edges)  # idempotent
    store = MemgraphGraphStore(client, "test/repo", "s1")
    costs = store.expand(["a"], COSTS, 3.5, 10, both_directions=False).costs
    assert costs == {"a": 0.0, "b": 1.0, "c": 2.0}
    assert set(store.pagerank()) == {"a", "b", "c", "d"}
    calls = MemgraphGraphStore(client, "test/repo", "s1").edges("CALLS")  # resolution and lines stored on edges
    assert [(e.src, e.dst, e.sites, e.resolution) for e in calls] == [("a", "b", [1], "type"), ("b", "c", [1], "type")]
    assert loader.load("test/repo", "s2", [], [], edges)["deleted"] == 4
    client.close()

"""Memgraph as the multi-repository code-graph store (`graph.store: memgraph`, `graph.memgraph_uri`).

`MemgraphGraphStore` implements `semantica.stores.graph.GraphStore` for ONE snapshot of one repository:
nodes are `(:Node {repo, snapshot, id})`, edges `[:EDGE {type}]`. The cost-bounded neighbourhood uses
Memgraph's weighted shortest paths (`*WSHORTEST (r, n | cost) total`, cost per edge type built into the
query as a CASE expression, a node penalty applied to the target node as in `CsrGraphStore`), or plain
`*BFS ..k` hop-bounded expansion; PageRank comes from MAGE `pagerank.get()`. `MemgraphLoader` writes a
snapshot's nodes and edges with idempotent batched `UNWIND ... MERGE` statements tagged by repo and
snapshot, then deletes the repo's superseded snapshots.

The client is pymgclient (`pip install '.[memgraph]'`) or the neo4j Bolt driver, whichever imports. The
Cypher is built by pure functions so it can be tested without a server.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol
from urllib.parse import urlparse

from semantica.schema import Chunk, Edge, Symbol, file_node_id
from semantica.stores.graph import Expansion

NODE_LABEL = "Node"
EDGE_LABEL = "EDGE"
DEFAULT_BATCH = 1000
DEFAULT_PORT = 7687
DELETE_BATCH = 10000


class MemgraphError(RuntimeError):
    """No client library, no server, or a failed statement; the message says which."""


# -- pure Cypher builders --------------------------------------------------------------------------


def _literal(value: float) -> str:
    return repr(float(value)) if math.isfinite(value) else "1.0e308"


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def cost_expression(edge_costs: dict[str, float], edge: str = "r", node: str = "n") -> str:
    """Per-edge cost: the type's cost (unknown types excluded by the filter) x the target node's penalty."""
    cases = " ".join(f"WHEN {_quote(t)} THEN {_literal(c)}" for t, c in sorted(edge_costs.items()))
    return f"(CASE {edge}.type {cases} ELSE 1.0e308 END) * coalesce({node}.penalty_factor, 1.0)"


def arrows(both_directions: bool, reverse: bool = False) -> tuple[str, str]:
    """Cypher arrow ends: both ways, backwards (callers of a seed) or forwards."""
    if both_directions:
        return "-", "-"
    return ("<-", "-") if reverse else ("-", "->")


def expand_query(edge_costs: dict[str, float], both_directions: bool, reverse: bool = False) -> str:
    """Cost-bounded multi-seed neighbourhood: cheapest weighted path from any seed, capped at $max_cost."""
    arrow_l, arrow_r = arrows(both_directions, reverse)
    types = ", ".join(_quote(t) for t in sorted(edge_costs))
    return (
        f"UNWIND $seeds AS seed "
        f"MATCH (s:{NODE_LABEL} {{repo: $repo, snapshot: $snapshot, id: seed}}) "
        f"MATCH (s){arrow_l}[:{EDGE_LABEL} *WSHORTEST (r, n | {cost_expression(edge_costs)}) total "
        f"(r, n | r.type IN [{types}] AND n.repo = $repo AND n.snapshot = $snapshot)]{arrow_r}(t:{NODE_LABEL}) "
        f"WHERE total <= $max_cost "
        f"RETURN t.id AS id, min(total) AS cost ORDER BY cost ASC, id ASC LIMIT $max_nodes"
    )


def bfs_query(max_hops: int, both_directions: bool, reverse: bool = False) -> str:
    """Hop-bounded neighbourhood (`*BFS ..k`): cost = hop count."""
    if max_hops < 1:
        raise ValueError(f"max_hops must be >= 1, got {max_hops}")
    arrow_l, arrow_r = arrows(both_directions, reverse)
    return (
        f"UNWIND $seeds AS seed "
        f"MATCH (s:{NODE_LABEL} {{repo: $repo, snapshot: $snapshot, id: seed}}) "
        f"MATCH p = (s){arrow_l}[:{EDGE_LABEL} *BFS ..{int(max_hops)} "
        f"(r, n | n.repo = $repo AND n.snapshot = $snapshot)]{arrow_r}(t:{NODE_LABEL}) "
        f"RETURN t.id AS id, min(size(relationships(p))) AS cost ORDER BY cost ASC, id ASC LIMIT $max_nodes"
    )


def set_penalty_query() -> str:
    return (f"UNWIND $rows AS row MATCH (n:{NODE_LABEL} {{repo: $repo, snapshot: $snapshot, id: row.id}}) "
            f"SET n.penalty_factor = row.factor")


def clear_penalty_query() -> str:
    return (f"MATCH (n:{NODE_LABEL} {{repo: $repo, snapshot: $snapshot}}) WHERE n.penalty_factor IS NOT NULL "
            f"REMOVE n.penalty_factor")


def pagerank_query() -> str:
    return ("CALL pagerank.get() YIELD node, rank WITH node, rank "
            "WHERE node.repo = $repo AND node.snapshot = $snapshot RETURN node.id AS id, rank")


def merge_nodes_query() -> str:
    return (f"UNWIND $rows AS row MERGE (n:{NODE_LABEL} {{repo: $repo, snapshot: $snapshot, id: row.id}}) "
            f"SET n.kind = row.kind, n.path = row.path")


def merge_edges_query() -> str:
    return (f"UNWIND $rows AS row "
            f"MATCH (a:{NODE_LABEL} {{repo: $repo, snapshot: $snapshot, id: row.src}}) "
            f"MATCH (b:{NODE_LABEL} {{repo: $repo, snapshot: $snapshot, id: row.dst}}) "
            f"MERGE (a)-[e:{EDGE_LABEL} {{type: row.type}}]->(b) "
            f"SET e.line = row.line, e.lines = row.lines, e.resolution = row.resolution")


def edges_of_type_query() -> str:
    """One snapshot's edges of one type with where and how they were resolved (`MemgraphGraphStore.edges`)."""
    return (f"MATCH (a:{NODE_LABEL} {{repo: $repo, snapshot: $snapshot}})-[e:{EDGE_LABEL} {{type: $type}}]->"
            f"(b:{NODE_LABEL} {{repo: $repo, snapshot: $snapshot}}) "
            f"RETURN a.id, b.id, a.path, e.line, e.lines, e.resolution ORDER BY a.id, b.id")


def snapshot_nodes_query() -> str:
    return f"MATCH (n:{NODE_LABEL} {{repo: $repo, snapshot: $snapshot}}) WITH n LIMIT 1 RETURN count(n) AS loaded"


def delete_superseded_query() -> str:
    return (f"MATCH (n:{NODE_LABEL} {{repo: $repo}}) WHERE n.snapshot <> $snapshot "
            f"WITH n LIMIT $limit DETACH DELETE n RETURN count(*) AS deleted")


INDEX_QUERIES = (f"CREATE INDEX ON :{NODE_LABEL}(id)", f"CREATE INDEX ON :{NODE_LABEL}(repo)")


def batches(rows: Sequence[Any], size: int) -> Iterator[list[Any]]:
    if size < 1:
        raise ValueError(f"batch size must be >= 1, got {size}")
    for start in range(0, len(rows), size):
        yield list(rows[start : start + size])


def node_rows(symbols: Iterable[Symbol], chunks: Iterable[Chunk], edges: Iterable[Edge]) -> list[dict[str, Any]]:
    """Every node a snapshot's graph needs: symbols, files, and resolved edge endpoints (deduplicated)."""
    rows: dict[str, dict[str, Any]] = {}
    for s in symbols:
        rows.setdefault(s.symbol_id, {"id": s.symbol_id, "kind": str(s.kind), "path": s.path})
    for c in chunks:
        node = file_node_id(c.path)
        rows.setdefault(node, {"id": node, "kind": "file", "path": c.path})
    for e in edges:
        if e.resolved and e.src != e.dst:
            for node in (e.src, e.dst):
                rows.setdefault(node, {"id": node, "kind": "", "path": e.path})
    return sorted(rows.values(), key=lambda r: r["id"])


def edge_rows(edges: Iterable[Edge]) -> list[dict[str, Any]]:
    """Resolved, non-loop edges, one per (src, dst, type) like CsrGraphStore, with every site line and how
    the edge was resolved (import, self, type, ... as in edges.parquet)."""
    seen: dict[tuple[str, str, str], dict[str, Any]] = {}
    for e in edges:
        if e.resolved and e.src != e.dst:
            row = seen.setdefault((e.src, e.dst, e.type), {"src": e.src, "dst": e.dst, "type": e.type, "line": e.line,
                                                           "lines": [], "resolution": e.resolution})
            row["lines"] = sorted(set(row["lines"]) | set(e.sites))
    return [seen[k] for k in sorted(seen)]


# -- the client --------------------------------------------------------------------------------------


class CypherClient(Protocol):
    def execute(self, query: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]: ...

    def close(self) -> None: ...


class _MgClient:
    def __init__(self, uri: str) -> None:
        import mgclient  # type: ignore[import-not-found]

        parsed = urlparse(uri)
        kwargs: dict[str, Any] = {"host": parsed.hostname or "127.0.0.1", "port": parsed.port or DEFAULT_PORT}
        if parsed.username:
            kwargs.update(username=parsed.username, password=parsed.password or "")
        self._conn = mgclient.connect(**kwargs)
        self._conn.autocommit = True

    def execute(self, query: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        cursor = self._conn.cursor()
        cursor.execute(query, params or {})
        return [tuple(row) for row in cursor.fetchall()]

    def close(self) -> None:
        self._conn.close()


class _Neo4jClient:
    def __init__(self, uri: str) -> None:
        import neo4j  # type: ignore[import-not-found]

        parsed = urlparse(uri)
        auth = (parsed.username, parsed.password or "") if parsed.username else None
        clean = f"{parsed.scheme or 'bolt'}://{parsed.hostname or '127.0.0.1'}:{parsed.port or DEFAULT_PORT}"
        self._driver = neo4j.GraphDatabase.driver(clean, auth=auth)

    def execute(self, query: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        with self._driver.session() as session:
            return [tuple(record.values()) for record in session.run(query, params or {})]

    def close(self) -> None:
        self._driver.close()


def connect(uri: str) -> CypherClient:
    """A Cypher client for `uri` (bolt://[user:pass@]host:port) through pymgclient, else neo4j."""
    if not uri:
        raise MemgraphError("graph.memgraph_uri is empty; set it to bolt://host:7687")
    errors: list[str] = []
    for factory in (_MgClient, _Neo4jClient):
        try:
            return factory(uri)
        except ImportError as exc:
            errors.append(str(exc))
        except Exception as exc:  # the library is there but the server is not
            raise MemgraphError(f"cannot connect to Memgraph at {uri}: {type(exc).__name__}: {exc}") from exc
    raise MemgraphError("no Memgraph client library: pip install '.[memgraph]' (pymgclient) or neo4j "
                        f"({'; '.join(errors)})")


# -- store and loader ------------------------------------------------------------------------------


class MemgraphGraphStore:
    """`GraphStore` over one (repo, snapshot) in Memgraph."""

    def __init__(self, client: CypherClient, repo: str, snapshot: str, max_hops: int | None = None) -> None:
        self.client, self.repo, self.snapshot, self.max_hops = client, repo, snapshot, max_hops
        self._penalty_key: tuple | None = None
        self._loaded = False

    def ensure_loaded(self) -> None:
        """Fail loudly when this snapshot's graph was never loaded: an empty answer would look like 'no neighbours'."""
        if self._loaded:
            return
        rows = self.client.execute(snapshot_nodes_query(), self._params())
        if not rows or not rows[0][0]:
            raise MemgraphError(f"the graph store holds no graph for {self.repo}@{self.snapshot}: it was not loaded "
                                "(index with graph.store: memgraph, or switch serving to graph.store: embedded)")
        self._loaded = True

    def _params(self, **extra: Any) -> dict[str, Any]:
        return {"repo": self.repo, "snapshot": self.snapshot, **extra}

    def _apply_penalty(self, node_penalty: dict[str, float] | None) -> None:
        key = tuple(sorted((node_penalty or {}).items()))
        if key == self._penalty_key:
            return
        self.client.execute(clear_penalty_query(), self._params())
        rows = [{"id": n, "factor": float(f)} for n, f in sorted((node_penalty or {}).items())]
        for batch in batches(rows, DEFAULT_BATCH):
            self.client.execute(set_penalty_query(), self._params(rows=batch))
        self._penalty_key = key

    def expand(self, seeds: Sequence[str], edge_costs: dict[str, float], max_cost: float, max_nodes: int,
               both_directions: bool, node_penalty: dict[str, float] | None = None,
               reverse: bool = False) -> Expansion:
        seed_list = sorted(set(seeds))
        if not seed_list or max_nodes <= 0:
            return Expansion({})
        self.ensure_loaded()
        if self.max_hops:
            query = bfs_query(self.max_hops, both_directions, reverse)
        else:
            self._apply_penalty(node_penalty)
            query = expand_query(edge_costs, both_directions, reverse)
        rows = self.client.execute(query, self._params(seeds=seed_list, max_cost=float(max_cost),
                                                        max_nodes=int(max_nodes)))
        costs = {seed: 0.0 for seed in seed_list if self._exists(seed)}  # a seed reaches itself at cost 0
        for node, cost in rows:
            if node not in costs or cost < costs[node]:
                costs[node] = float(cost)
        ordered = sorted(costs.items(), key=lambda item: (item[1], item[0]))[:max_nodes]
        return Expansion(dict(ordered))

    def _exists(self, node: str) -> bool:
        return bool(self.client.execute(
            f"MATCH (n:{NODE_LABEL} {{repo: $repo, snapshot: $snapshot, id: $id}}) RETURN count(n)",
            self._params(id=node))[0][0])

    def pagerank(self) -> dict[str, float]:
        self.ensure_loaded()
        return {node: float(rank) for node, rank in self.client.execute(pagerank_query(), self._params())}

    def edges(self, edge_type: str) -> list[Edge]:
        """The loaded edges of one type, as `Edge`s with their lines and resolution (read back from Memgraph)."""
        self.ensure_loaded()
        rows = self.client.execute(edges_of_type_query(), self._params(type=edge_type))
        return [Edge(src, dst, edge_type, self.repo, path or "", int(line or 0), True, resolution or "", list(lines or []))
                for src, dst, path, line, lines, resolution in rows]


class MemgraphLoader:
    """Writes one snapshot's graph idempotently and drops the repo's older snapshots."""

    def __init__(self, client: CypherClient, batch_size: int = DEFAULT_BATCH) -> None:
        self.client = client
        self.batch_size = batch_size

    def ensure_indexes(self) -> None:
        for query in INDEX_QUERIES:
            try:
                self.client.execute(query)
            except Exception:  # already there
                pass

    def load(self, repo: str, snapshot: str, symbols: Iterable[Symbol], chunks: Iterable[Chunk],
             edges: Sequence[Edge], delete_superseded: bool = True) -> dict[str, int]:
        self.ensure_indexes()
        nodes = node_rows(symbols, chunks, edges)
        links = edge_rows(edges)
        params = {"repo": repo, "snapshot": snapshot}
        for batch in batches(nodes, self.batch_size):
            self.client.execute(merge_nodes_query(), {**params, "rows": batch})
        for batch in batches(links, self.batch_size):
            self.client.execute(merge_edges_query(), {**params, "rows": batch})
        deleted = self.delete_superseded(repo, snapshot) if delete_superseded else 0
        return {"nodes": len(nodes), "edges": len(links), "deleted": deleted}

    def delete_superseded(self, repo: str, snapshot: str) -> int:
        total = 0
        while True:
            rows = self.client.execute(delete_superseded_query(),
                                       {"repo": repo, "snapshot": snapshot, "limit": DELETE_BATCH})
            deleted = int(rows[0][0]) if rows else 0
            total += deleted
            if deleted < DELETE_BATCH:
                return total


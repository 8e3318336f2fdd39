"""One real HTTP stack on 127.0.0.1: Ray Serve (local Ray, 0.1 CPU per replica) behind FastAPI.

The server runs in its own spawned process (`jobs.commands.serve.server_process`): this pytest process runs
the JVM (Lucene) for other tests, and Ray must never start in a process that does (see
semantica/runtime/ray_runtime.py for the crash that caused).
"""

from __future__ import annotations

import json
import sys

import httpx
import pytest
from ray import cloudpickle, serve

from jobs.commands.serve import server_process
from serving.ray.app import StageDeployment
from tests.conftest import free_port
from tests.serving.api.mcp.test_mcp_http_guard import raw_post
from tests.serving.ray.test_app import REPO_NAME, make_tiny_index

pytestmark = [pytest.mark.ray, pytest.mark.timeout(600)]
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the test's own deployment, shipped by value


@serve.deployment
class FlakyRetriever(StageDeployment.func_or_class):
    """A vector replica that fails for queries mentioning `explode` (a lost shard, a dying replica)."""

    def search(self, repo, query, k, filters):
        if "explode" in query.text:
            raise RuntimeError("replica lost its shard")
        return super().search(repo, query, k, filters)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    config = make_tiny_index(tmp_path_factory.mktemp("serve-http"))
    port = free_port()
    flaky = {"VectorRetriever": f"{__name__}:FlakyRetriever"}
    with server_process(config, port, overrides=flaky) as url, httpx.Client(base_url=url, timeout=120) as client:
        yield client, config


def test_search_explain_and_metadata(server):
    client, _ = server
    r = client.post("/v1/search", json={"query": "how is the cart total computed", "k": 3, "explain": True})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["degraded"] == [] and 0 < len(body["hits"]) <= 3
    assert body["hits"][0]["explanation"] and body["hits"][0]["citation"]
    assert {"vector", "lexical", "symbol", "graph", "fusion", "context"} <= set(body["timings_ms"])
    assert client.get("/v1/repos").json()[0]["repo"] == REPO_NAME
    # every answer says how fresh its snapshot is (the tiny repo is unchanged since it was indexed)
    fresh = body["freshness"][REPO_NAME]
    assert fresh["stale"] is False and fresh["commit"] and fresh["built_at"] and fresh["source"] == "worktree"
    assert client.get("/v1/repos").json()[0]["freshness"]["stale"] is False
    assert client.get("/healthz").json()["status"] == "ok"
    assert "/v1/search" in client.get("/openapi.json").json()["paths"]
    assert client.get("/docs").status_code == 200


def test_graph_endpoint_answers_exactly_and_errors_are_json(server):
    client, _ = server
    r = client.post("/v1/graph", json={"op": "callers", "name": "price_of", "repos": [REPO_NAME], "depth": 1})
    assert r.status_code == 200, r.text
    assert [(a["qualname"], a["citation"]) for a in r.json()["answers"]] == [("Cart.total", "shop/cart.py:14")]
    bad_op = client.post("/v1/graph", json={"op": "friends", "name": "price_of"})
    assert bad_op.status_code == 422 and "callers, callees, defs, refs, impls" in bad_op.json()["message"]
    deep = client.post("/v1/graph", json={"op": "callers", "name": "price_of", "depth": 99})
    assert deep.status_code == 422 and deep.json()["error"] == "GraphRequestError"
    unknown = client.post("/v1/graph", json={"op": "defs", "name": "nothing_here"})
    assert unknown.status_code == 404 and "nothing_here" in unknown.json()["message"]
    assert unknown.json()["request_id"] == unknown.headers["x-request-id"]  # through Serve's proxy too
    quoted = client.post("/v1/graph", json={"op": "friends", "name": "x"}, headers={"X-Request-ID": "real-stack-1"})
    assert quoted.json()["request_id"] == quoted.headers["x-request-id"] == "real-stack-1"
    routed = client.post("/v1/search", json={"query": "who calls price_of", "k": 3}).json()
    assert routed["graph"]["op"] == "callers" and routed["hits"][0]["graph"]["citation"] == "shop/cart.py:14"
    first = routed["hits"][0]  # an exact answer has a rank in the graph answer and a score that is never 0.0
    assert first["graph"]["rank"] == 1 and first["graph"]["sites"] == ["shop/cart.py:14"] and first["score"] > 0


def test_errors_are_json_with_the_right_status(server):
    client, _ = server
    bad_json = client.post("/v1/search", content=b"{not json", headers={"content-type": "application/json"})
    assert bad_json.status_code == 422 and bad_json.json()["detail"]
    missing = client.post("/v1/search", json={"k": 3})
    assert missing.status_code == 422
    empty = client.post("/v1/search", json={"query": "  "})
    assert empty.status_code == 400 and empty.json()["error"] == "QueryError"
    too_many = client.post("/v1/search", json={"query": "cart", "k": 100000})
    assert too_many.status_code == 400
    unknown = client.post("/v1/search", json={"query": "cart", "repos": ["no/such"]})
    assert unknown.status_code == 404 and "no/such" in unknown.json()["message"]
    for bad in ({"query": "cart", "strategies": ["bogus"]}, {"query": "cart", "k": True},
                {"query": "cart", "repos": [""]}, {"query": "cart", "repos": [".."]}, {"query": "cart", "repos": ["a\x00"]}):
        r = client.post("/v1/search", json=bad)
        assert r.status_code == 422 and r.json()["error"] == "ValidationError", (bad, r.text)
    surrogate = client.post("/v1/feedback", content=b'{"query": "q \\ud800", "chunk_ids": ["c"]}',
                            headers={"content-type": "application/json"})
    assert surrogate.status_code == 201, surrogate.text
    nan = client.post("/v1/feedback", content=b'{"query": "q", "chunk_ids": ["c"], "rating": NaN}',
                      headers={"content-type": "application/json"})
    assert nan.status_code == 422 and nan.json()["error"]
    huge = client.post("/v1/feedback", json={"query": "q", "chunk_ids": ["c"], "comment": "x" * 5_000_000})
    assert huge.status_code == 413 and huge.json()["error"] == "PayloadTooLarge"
    rebinding = client.get("/v1/repos", headers={"Host": "attacker.example"})
    assert rebinding.status_code == 400 and rebinding.json()["reason"] == "host_not_allowed"
    metrics = client.get("/metrics")
    assert metrics.status_code == 200 and "semantica_http_requests_total" in metrics.text


def test_failing_retriever_replica_gives_a_degraded_answer(server):
    client, _ = server
    r = client.post("/v1/search", json={"query": "explode price_of"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert [d["stage"] for d in body["degraded"]] == ["vector"] and "shard" in body["degraded"][0]["error"]
    assert body["hits"]


def test_feedback_is_stored_durably(server):
    client, config = server
    hit = client.post("/v1/search", json={"query": "price_of"}).json()["hits"][0]
    r = client.post("/v1/feedback", json={"query": "price_of", "chunk_ids": [hit["chunk_id"]]})
    assert r.status_code == 201, r.text
    from pathlib import Path

    stored = [json.loads(line) for f in Path(config.serve.feedback_dir).glob("*.jsonl")
              for line in f.read_text().splitlines()]
    assert stored[-1]["chunk_ids"] == [hit["chunk_id"]]
    nothing = client.post("/v1/feedback", json={"query": "q"})  # selects nothing: the body's model refuses it
    assert nothing.status_code == 422 and "feedback selects nothing" in nothing.json()["message"]


def test_two_host_headers_are_a_400_through_the_real_proxy(server):
    """RFC 9112 3.2 (N17): a request with two Host headers, the allowed one first, sent byte for byte to the
    running server (Serve's HTTP proxy in front of the ingress) is refused; the same request with one is answered."""
    client, _ = server
    port = client.base_url.port
    host, body = f"127.0.0.1:{port}", json.dumps({"query": "cart", "k": 1}).encode()
    json_type = ("Content-Type", "application/json")
    assert raw_post(port, [("Host", host), json_type], body, "/v1/search") == 200
    assert raw_post(port, [("Host", host), ("Host", "evil.example"), json_type], body, "/v1/search") == 400

"""One real HTTP stack on 127.0.0.1: Ray Serve (local Ray, 0.1 CPU per replica) behind FastAPI."""

from __future__ import annotations

import json
import socket
import sys

import httpx
import pytest
import ray
from ray import cloudpickle, serve

from serving.app import RetrieverDeployment, build_graph, deployment_options
from tests.serving.test_app import REPO_NAME, make_tiny_index

pytestmark = [pytest.mark.ray, pytest.mark.timeout(600)]
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the test's own deployment, shipped by value


@serve.deployment
class FlakyRetriever(RetrieverDeployment.func_or_class):
    """A vector replica that fails for queries mentioning `explode` (a lost shard, a dying replica)."""

    def search(self, repo, query, k, filters):
        if "explode" in query.text:
            raise RuntimeError("replica lost its shard")
        return super().search(repo, query, k, filters)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    config = make_tiny_index(tmp_path_factory.mktemp("serve-http"))
    port = _free_port()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        serve.run(build_graph(config, deployment_options(None), {"VectorRetriever": FlakyRetriever}),
                  name="semantica", route_prefix="/")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
            yield client, config
    finally:
        serve.shutdown()
        ray.shutdown()


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
    assert client.post("/v1/feedback", json={"query": "q"}).status_code == 400

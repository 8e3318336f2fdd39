"""What an outside probe broke on the real ingress app: one unreadable snapshot, absurdly nested JSON, a
client hanging up, and an OpenAPI document that did not match the server."""

from __future__ import annotations

import asyncio
import json

import jsonschema_rs
import pytest
from prometheus_client.parser import text_string_to_metric_families

from semantica.layout import IndexLayout
from serving.ray.app import ingress_app
from tests.serving.local_ingress import client, local_stage_handles, make_core, run
from tests.serving.ray.test_app import REPO_NAME, make_tiny_index

pytestmark = pytest.mark.timeout(300)
BROKEN_REPO = "tiny/broken"
DEEP = 100_000


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """The tiny shop, and a copy of it under another name whose chunks.parquet is cut short."""
    from pipelines.indexer import Indexer

    root = tmp_path_factory.mktemp("http-reliability")
    config = make_tiny_index(root)
    Indexer(config, progress=False).index(str(root / "repo"), BROKEN_REPO)
    chunks = IndexLayout(config.paths.index_root).current(BROKEN_REPO).root / "chunks.parquet"
    chunks.write_bytes(chunks.read_bytes()[:100])
    return config, local_stage_handles(config)


@pytest.fixture
def core(setup):
    config, handles = setup
    return make_core(config, handles)


async def _post(core, path, **kwargs):
    async with client(core) as http:
        return await http.post(path, **kwargs)


async def _get(core, path):
    async with client(core) as http:
        return await http.get(path)


def test_one_unreadable_snapshot_does_not_fail_a_graph_question_about_the_others(core):
    answer = run(_post(core, "/v1/graph", json={"op": "defs", "name": "price_of"}))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert {a["repo"] for a in body["answers"]} == {REPO_NAME} and list(body["snapshots"]) == [REPO_NAME]
    assert [(d["stage"], d["repo"]) for d in body["degraded"]] == [("snapshot", BROKEN_REPO)]
    only_broken = run(_post(core, "/v1/graph", json={"op": "defs", "name": "price_of", "repos": [BROKEN_REPO]}))
    assert only_broken.status_code == 503 and only_broken.json()["error"] == "BrokenSnapshotError", only_broken.text


def test_repos_listing_and_healthz_agree_that_the_snapshot_is_broken(core):
    listing = {r["repo"]: r for r in run(_get(core, "/v1/repos")).json()}
    assert listing[REPO_NAME]["status"] == "ok"
    assert listing[BROKEN_REPO]["status"] == "broken" and "chunks.parquet" in listing[BROKEN_REPO]["error"]
    health = run(_get(core, "/healthz")).json()
    assert health["broken"] == [r for r, row in listing.items() if row["status"] != "ok"] == [BROKEN_REPO]


@pytest.mark.parametrize("path", ["/v1/search", "/v1/graph", "/v1/feedback"])
@pytest.mark.parametrize("content_type", ["application/json", None])
def test_json_nested_far_past_the_limit_is_413_json(core, path, content_type):
    body = b"[" * DEEP + b"]" * DEEP
    headers = {"content-type": content_type} if content_type else {}
    answer = run(_post(core, path, content=body, headers=headers))
    assert answer.status_code == 413, answer.text
    assert answer.headers["content-type"].startswith("application/json") and "max_json_depth" in answer.json()["message"]
    nested = b'{"query": ' + b"[" * DEEP + b"]" * DEEP + b"}"
    assert run(_post(core, path, content=nested, headers=headers)).status_code == 413


def _statuses(metrics_text: str, route: str) -> dict[str, float]:
    return {s.labels["status"]: s.value for family in text_string_to_metric_families(metrics_text)
            for s in family.samples if s.name == "semantica_http_requests_total" and s.labels["route"] == route}


async def _hang_up(app, cancel: bool) -> None:
    """A search whose client goes away: its connection drops (a disconnect message), or Serve cancels the
    request when the client hangs up."""

    async def receive():
        if cancel:
            await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message):
        return None

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "path": "/v1/search", "raw_path": b"/v1/search", "query_string": b"", "root_path": "", "scheme": "http",
             "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 5000),
             "headers": [(b"host", b"localhost"), (b"content-type", b"application/json")]}
    task = asyncio.ensure_future(app(scope, receive, send))
    if cancel:
        await asyncio.sleep(0.2)
        task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def test_a_client_hanging_up_is_counted_as_499_not_as_a_server_error(core):
    app = ingress_app(core)
    run(_hang_up(app, cancel=True))
    run(_hang_up(app, cancel=False))

    async def scrape():
        async with client(core) as http:
            return (await http.get("/metrics")).text

    statuses = _statuses(run(scrape()), "/v1/search")
    assert statuses == {"499": 2.0}, statuses


# -- the OpenAPI document matches the server ---------------------------------------------------------


@pytest.fixture(scope="module")
def document(setup):
    config, handles = setup
    return run(_get(make_core(config, handles), "/openapi.json")).json()


def _valid(document, component: str, instance) -> bool:
    return jsonschema_rs.is_valid({"$ref": f"#/components/schemas/{component}", "components": document["components"]},
                                  instance)


def test_every_route_documents_its_error_statuses_with_the_real_error_body(document):
    body_routes = {"/v1/search": "post", "/v1/grep": "post", "/v1/graph": "post", "/v1/map": "post", "/v1/feedback": "post",
                   "/v1/plan": "post"}
    for path, method in body_routes.items():
        responses = document["paths"][path][method]["responses"]
        assert {"400", "401", "404", "413", "422", "503", "504"} <= set(responses), (path, sorted(responses))
        for status in ("400", "404", "413", "422", "503"):
            schema = responses[status]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (path, status, schema)
    assert {"400", "401", "503", "504"} <= set(document["paths"]["/v1/repos"]["get"]["responses"])
    metrics = document["paths"]["/metrics"]["get"]["responses"]
    assert "403" in metrics and list(metrics["200"]["content"]) == ["text/plain; version=0.0.4; charset=utf-8"]
    assert "HTTPValidationError" not in json.dumps(document)


def test_the_422_body_is_the_documented_one(core, document):
    answer = run(_post(core, "/v1/search", json={"query": "cart", "k": "three"}))
    assert answer.status_code == 422 and _valid(document, "ErrorBody", answer.json()), answer.text
    assert answer.json()["detail"][0]["field"] == "k"


@pytest.mark.parametrize(("component", "body"), [
    ("SearchBody", {"query": ""}), ("SearchBody", {"query": "   "}), ("SearchBody", {"query": "x", "repos": [""]}),
    ("SearchBody", {"query": "x", "repos": ["a/../b"]}), ("SearchBody", {"query": "x", "k": 0}),
    ("SearchBody", {"query": "x", "k": 100_000}), ("SearchBody", {"query": "x", "strategies": ["bogus"]}),
    ("GraphBody", {"op": "defs", "name": "x", "depth": 0}), ("GraphBody", {"op": "defs", "name": ""}),
    ("GraphBody", {"op": "nope", "name": "x"}), ("MapBody", {"tokens": 0}),
    ("FeedbackBody", {"query": "q", "chunk_ids": ["x"], "snapshots": {"": "s"}}),
])
def test_what_the_server_refuses_the_schema_refuses_too(core, document, component, body):
    assert not _valid(document, component, body)
    path = {"SearchBody": "/v1/search", "GraphBody": "/v1/graph", "MapBody": "/v1/map", "FeedbackBody": "/v1/feedback"}
    assert run(_post(core, path[component], json=body)).status_code in (400, 422)


@pytest.mark.parametrize(("path", "body"), [
    ("/v1/search", {"query": "price_of", "repos": [REPO_NAME], "k": 1, "strategies": ["lexical"], "mode": "hybrid"}),
    ("/v1/graph", {"op": "defs", "name": "price_of", "repos": [REPO_NAME], "depth": 1}),
    ("/v1/map", {"repos": [REPO_NAME], "tokens": 64}),
    ("/v1/feedback", {"query": "q", "chunk_ids": ["x"], "repos": [REPO_NAME], "snapshots": {REPO_NAME: "s"}}),
])
def test_what_the_schema_allows_the_server_accepts(core, document, path, body):
    component = {"/v1/search": "SearchBody", "/v1/graph": "GraphBody", "/v1/map": "MapBody",
                 "/v1/feedback": "FeedbackBody"}[path]
    assert _valid(document, component, body)
    answer = run(_post(core, path, json=body))
    assert answer.status_code in (200, 201), answer.text



def test_everything_that_parses_as_http_gets_a_json_error(core):
    async def calls():
        async with client(core) as http:
            return [await http.get("/no/such/route"), await http.delete("/v1/search"), await http.get("/v1/search")]

    for answer, status in zip(run(calls()), (404, 405, 405)):
        assert answer.status_code == status and answer.headers["content-type"].startswith("application/json")
        assert answer.json()["error"] == "HTTPError", answer.text

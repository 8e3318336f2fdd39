"""Observability on the real ingress HTTP app over real Serve deployment handles (local testing mode: each
stage is called through its `DeploymentHandle`, on Serve's own loop thread, so nothing is shared with the
ingress but what the call carries): one trace per request across the deployments, and the request id in
every JSON error body and in that request's log line."""

from __future__ import annotations

import io
import json
import logging

import httpx
import pytest
from ray import serve

from semantica.runtime import observability
from serving.api.http.security import ensure_token_file
from serving.ray.app import StageDeployment
from serving.retrievers.base import Filters, RetrievalQuery
from tests.serving.local_ingress import client, local_stage_handles, make_core, run, variant
from tests.serving.ray.test_app import REPO_NAME, make_tiny_index

pytestmark = pytest.mark.timeout(600)
CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
REPLICA_SPANS = {"intent": "serve Intent.call", "fusion": "serve Fusion.call", "vector": "serve VectorRetriever.search",
                 "lexical": "serve LexicalRetriever.search", "context": "serve ContextBuilder.build_context"}


replica_log = logging.getLogger("tests.replica")
replica_log.setLevel(logging.INFO)


@serve.deployment
class LoggingRetriever(StageDeployment.func_or_class):
    """The vector stage, logging as a replica would (its handler formats the request id it runs under)."""

    def search(self, repo, query, k, filters):
        replica_log.info("vector search in %s", repo)
        return super().search(repo, query, k, filters)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("http-observability")
    config = make_tiny_index(root)
    token_file, _ = ensure_token_file(root / "secrets" / "token")
    (root / "tokens.yaml").write_text(json.dumps([{"name": "tiny-team", "token": "scoped-token-0123456789",
                                                   "repos": ["tiny/*"]}]))
    return config, local_stage_handles(config), token_file.read_text().strip(), root


@pytest.fixture()
def access_lines():
    """The access log as the JSON lines `json_logs: true` writes."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(observability.JsonLogFormatter())
    logger = logging.getLogger(observability.ACCESS_LOGGER)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    logger.removeHandler(handler)


async def _call(core, method, path, headers=None, **kwargs):
    async with client(core, headers) as http:
        return await http.request(method, path, **kwargs)


def test_one_trace_across_the_deployments_with_the_explain_stage_names(setup, spans):
    config, handles, _, _ = setup
    core = make_core(config, handles)
    headers = {"traceparent": f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01", "X-Request-ID": "trace-req-1"}
    response = run(_call(core, "POST", "/v1/search", headers, json={"query": "total price of the cart", "k": 3}))
    assert response.status_code == 200, response.text
    finished = spans.get_finished_spans()
    assert {f"{s.context.trace_id:032x}" for s in finished} == {CLIENT_TRACE}  # the client's trace, every span
    by_id = {s.context.span_id: s for s in finished}
    root = next(s for s in finished if s.name == "HTTP POST /v1/search")
    assert f"{root.parent.span_id:016x}" == CLIENT_SPAN and root.parent.is_remote
    search = next(s for s in finished if s.name == "search")
    assert by_id[search.parent.span_id] is root
    stages = {s.name: s for s in finished if s.parent is not None and s.parent.span_id == search.context.span_id}
    assert set(stages) == set(response.json()["timings_ms"])  # the names --explain prints
    replica = {s.name: s for s in finished if s.name.startswith("serve ")}
    for stage, name in REPLICA_SPANS.items():
        span = replica[name]
        assert span.parent.is_remote, f"{name} joined through the call's traceparent, not a shared context"
        assert by_id[span.parent.span_id] is stages[stage], f"{name} nests under the ingress's {stage} span"
        assert span.attributes["semantica.request_id"] == "trace-req-1"


def test_a_replica_logs_under_the_request_id_its_call_carries(setup):
    """The replica side of the boundary: a call made with `observability.carrier()`'s headers (tracing off:
    the request id alone) runs under that id; a call without them under none. (Local testing mode may share
    the caller's context variables, so the call is made from a caller that has no request id.)"""
    config, _, _, _ = setup
    handle = local_stage_handles(config, VectorRetriever=LoggingRetriever)["VectorRetriever"]
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(observability.JsonLogFormatter())
    replica_log.addHandler(handler)
    args = (REPO_NAME, RetrievalQuery.of("add an item to the cart"), 2, Filters())
    try:
        carried = handle.traced.remote({"x-request-id": "plain-req-2"}, "search", *args).result(timeout_s=120)
        plain = handle.search.remote(*args).result(timeout_s=120)
    finally:
        replica_log.removeHandler(handler)
    assert carried == plain and carried  # the same answer either way
    with_id, without = (json.loads(line) for line in stream.getvalue().splitlines())
    assert with_id["request_id"] == "plain-req-2" and "trace_id" not in with_id
    assert "request_id" not in without


def test_every_json_error_carries_the_request_id_of_its_log_line(setup, access_lines):
    config, handles, token, root = setup
    logged = variant(config, "observability.access_log=true")
    secured = variant(logged, "auth.mode=required", f"auth.token_file={root / 'secrets' / 'token'}",
                      f"auth.tokens_file={root / 'tokens.yaml'}", "limits.max_body_bytes=2000")
    open_core, auth_core = make_core(logged, handles), make_core(secured, handles)
    bearer = {"Authorization": f"Bearer {token}"}
    draining = make_core(logged, handles)
    draining.admission.begin_drain()
    cases = [
        (auth_core, "POST", "/v1/search", {**bearer, "Host": "evil.example.com"}, {"json": {"query": "cart"}}, 400),
        (auth_core, "POST", "/v1/search", {}, {"json": {"query": "cart"}}, 401),
        (auth_core, "GET", "/metrics", {"Authorization": "Bearer scoped-token-0123456789"}, {}, 403),
        (open_core, "POST", "/v1/search", {}, {"json": {"query": "cart", "repos": ["no/such"]}}, 404),
        (auth_core, "POST", "/v1/search", bearer, {"json": {"query": "cart " * 1000}}, 413),
        (open_core, "POST", "/v1/search", {}, {"json": {"k": 3}}, 422),
        (draining, "POST", "/v1/search", {}, {"json": {"query": "cart"}}, 503),
    ]
    for i, (core, method, path, headers, kwargs, status) in enumerate(cases):
        given = f"err-{status}-{i}"
        response = run(_call(core, method, path, {**headers, "X-Request-ID": given}, **kwargs))
        assert response.status_code == status, (status, response.text)
        assert response.json()["request_id"] == given == response.headers["x-request-id"]
        line = access_lines()[-1]
        assert line["request_id"] == given and line["http"] == {**line["http"], "status": status, "path": path}
        assert line["level"] == ("ERROR" if status >= 500 else "WARNING")
    made = run(_call(open_core, "POST", "/v1/search", {"X-Request-ID": "not a token"}, json={}))
    assert made.json()["request_id"] == made.headers["x-request-id"] == access_lines()[-1]["request_id"]
    ok = run(_call(open_core, "POST", "/v1/search", {"X-Request-ID": "fine-1"}, json={"query": "cart", "k": 1}))
    assert ok.status_code == 200 and ok.json()["hits"][0]["repo"] == REPO_NAME
    assert access_lines()[-1]["level"] == "INFO" and access_lines()[-1]["request_id"] == "fine-1"


def test_an_unexpected_error_is_a_500_with_the_request_id_and_its_traceback_logged(setup, caplog):
    config, handles, _, _ = setup
    core = make_core(config, handles)

    def broken(payload, principal=None):
        raise RuntimeError("boom in /srv/secret")

    core.search = broken
    response = run(_call(core, "POST", "/v1/search", {"X-Request-ID": "bug-7"}, json={"query": "cart"}))
    assert response.status_code == 500 and response.headers["x-request-id"] == "bug-7"
    body = response.json()
    assert body["request_id"] == "bug-7" and body["error"] == "InternalError" and "boom" not in json.dumps(body)
    assert any("boom" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)


def test_behind_serves_proxy_the_error_body_and_the_one_header_agree(setup):
    """Ray Serve's HTTP proxy (its own `RequestIdMiddleware`, in front of the replica's app) picks the id
    and echoes it; the replica's app takes that id as it is and adds no second header."""
    from ray.serve._private.http_util import RequestIdMiddleware

    from serving.ray.app import ingress_app

    config, handles, _, _ = setup
    proxied = RequestIdMiddleware(ingress_app(make_core(config, handles), behind_proxy=True))

    async def post(headers):
        transport = httpx.ASGITransport(app=proxied, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            return await http.post("/v1/search", json={"query": "cart", "repos": ["no/such"]}, headers=headers)

    for headers in ({}, {"X-Request-ID": "from-client-1"}, {"X-Request-ID": "odd id with spaces"}):
        response = run(post(headers))
        assert response.status_code == 404
        assert response.headers.get_list("x-request-id") == [response.json()["request_id"]]
        if headers:
            assert response.json()["request_id"] == headers["X-Request-ID"]

"""Traces and JSON logs on a real in-process query (tiny repository, real MiniLM, FAISS and Lucene): one
trace per request, a span per stage named as the `--explain` timings, nested under the MCP or HTTP
request span; JSON log lines carry the request id the response returns."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from semantica.api import SearchRequest
from semantica.config import ObservabilityConfig
from semantica.runtime import observability
from serving.api.mcp.server import SemanticaTools
from serving.pipeline import SearchPipeline
from tests.conftest import make_config
from tests.dated_git import one_commit_repo

REPO = "t/traced"
FILES = {
    "ledger/calc.py": 'def add(a, b):\n    """Add two amounts."""\n    return a + b\n',
    "ledger/book.py": "from ledger.calc import add\n\n\nclass Ledger:\n    def record(self, x):\n        return add(0, x)\n",
}


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> SearchPipeline:
    from pipelines.indexer import Indexer

    root = tmp_path_factory.mktemp("traced")
    repo = one_commit_repo(root / "repo", FILES)
    config = make_config(root)
    Indexer(config, progress=False).index(str(repo), REPO)
    return SearchPipeline(config)


def tree(finished: list) -> dict[str, list[str]]:  # noqa: ANN001 (ReadableSpan)
    by_id = {s.context.span_id: s for s in finished}
    children: dict[str, list[str]] = {}
    for s in finished:
        parent = by_id.get(s.parent.span_id).name if s.parent is not None and s.parent.span_id in by_id else ""
        children.setdefault(parent, []).append(s.name)
    return children


def test_mcp_search_is_one_trace_with_a_span_per_stage(pipeline: SearchPipeline, spans: InMemorySpanExporter) -> None:
    tools = SemanticaTools(pipeline.config, pipeline)
    answer = tools.search("add two amounts", k=3)
    finished = spans.get_finished_spans()
    assert len({s.context.trace_id for s in finished}) == 1
    children = tree(finished)
    assert children[""] == ["mcp search"] and children["mcp search"] == ["search"]
    stages = set(children["search"])
    assert stages == set(answer.timings_ms)  # the same names as --explain's timings
    assert {"intent", "vector", "lexical", "symbol", "fusion", "localize", "context"} <= stages


def test_tracing_off_records_nothing(pipeline: SearchPipeline) -> None:
    assert not observability.enabled()
    assert pipeline.search(SearchRequest(query="Ledger record", k=2)).hits


def test_http_request_span_request_id_and_json_logs(pipeline: SearchPipeline, spans: InMemorySpanExporter) -> None:
    log = logging.getLogger("semantica.test")

    def route(request: Request) -> JSONResponse:  # a query per request: the pipeline's answer cache would skip stages
        response = pipeline.search(SearchRequest(query=f"record amounts in the ledger {request.headers['x-request-id']}", k=2))
        log.info("answered %d hits", len(response.hits))
        return JSONResponse({"hits": len(response.hits)})

    app = observability.RequestContextMiddleware(Starlette(routes=[Route("/v1/search", route, methods=["POST"])]))
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(observability.JsonLogFormatter())
    log.addHandler(handler)
    log.setLevel(logging.INFO)

    async def call(headers: dict[str, str]) -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            return await client.post("/v1/search", headers=headers)

    try:
        given = asyncio.run(call({"X-Request-ID": "req-123"}))
        made = asyncio.run(call({"X-Request-ID": "bad id with spaces"}))
    finally:
        log.removeHandler(handler)
    assert given.headers["x-request-id"] == "req-123"
    assert made.headers["x-request-id"] != "bad id with spaces" and len(made.headers["x-request-id"]) == 32
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["request_id"] == "req-123" and first["message"] == "answered 2 hits" and len(first["trace_id"]) == 32
    assert second["request_id"] == made.headers["x-request-id"]
    finished = spans.get_finished_spans()
    children = tree(finished)
    assert children[""] == ["HTTP POST /v1/search"] * 2 and "search" in children["HTTP POST /v1/search"]
    assert {"intent", "fusion", "context"} <= set(children["search"])
    roots = [s for s in finished if s.name == "HTTP POST /v1/search"]
    assert roots[0].attributes["semantica.request_id"] == "req-123"


def test_otlp_needs_its_exporter_or_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_otlp(name: str, *args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        if name.startswith("opentelemetry.exporter.otlp"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_otlp)
    with pytest.raises(observability.ObservabilityError, match="opentelemetry-exporter-otlp-proto-http"):
        observability.configure(ObservabilityConfig(otlp_endpoint="http://collector:4318/v1/traces"))
    assert not observability.enabled()


def test_configure_off_is_a_no_op() -> None:
    observability.configure(ObservabilityConfig())
    assert not observability.enabled()


def test_config_section_loads(tmp_path: Path) -> None:
    config = make_config(tmp_path, "observability.tracing=true", "observability.json_logs=true")
    assert config.observability.tracing and config.observability.json_logs

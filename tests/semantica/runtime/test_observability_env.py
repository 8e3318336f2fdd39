"""Telemetry by OpenTelemetry's standard environment variables: a real `semantica query` process, configured by
nothing but OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_SERVICE_NAME, sends its spans (one per stage) to an OTLP/HTTP
receiver on loopback that decodes the SDK's protobuf ExportTraceServiceRequest; with
`--set observability.json_logs=true` every line the CLI logs is JSON; a library's DEBUG logger stays quiet."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from semantica.config import ObservabilityConfig
from semantica.runtime import observability
from tests.conftest import REPO_ROOT, free_port, make_config
from tests.dated_git import one_commit_repo

pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="SKIPPED LOUDLY: the otlp extra is not installed")
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

REPO = "t/otlp"
FILES = {"ledger/calc.py": 'def add(a, b):\n    """Add two amounts."""\n    return a + b\n',
         "ledger/book.py": "from ledger.calc import add\n\n\nclass Ledger:\n    def record(self, x):\n        return add(0, x)\n"}
CLI_TIMEOUT_S = 600


class Receiver(ThreadingHTTPServer):
    """An OTLP/HTTP trace receiver: POST /v1/traces with an ExportTraceServiceRequest (protobuf)."""

    def __init__(self, port: int) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.requests: list[ExportTraceServiceRequest] = []

    def spans(self) -> list[tuple[str, str]]:
        """(service.name, span name) of every span received."""
        out = []
        for request in self.requests:
            for resource_spans in request.resource_spans:
                service = next((a.value.string_value for a in resource_spans.resource.attributes if a.key == "service.name"), "")
                out += [(service, s.name) for scope in resource_spans.scope_spans for s in scope.spans]
        return out


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
            self.send_response(404)
            self.end_headers()
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.server.requests.append(request)  # type: ignore[attr-defined]
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture()
def receiver() -> Iterator[Receiver]:
    server = Receiver(free_port())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "SEMANTICA__"))}
    return {**env, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **extra}


def test_a_cli_query_sends_its_stage_spans_to_the_otlp_endpoint_of_the_environment(tmp_path: Path,
                                                                                     receiver: Receiver) -> None:
    from pipelines.indexer import Indexer

    config = make_config(tmp_path)
    Indexer(config, progress=False).index(str(one_commit_repo(tmp_path / "repo", FILES)), REPO)
    sets = ["--set", f"paths.index_root={config.paths.index_root}", "--set", f"paths.cache_dir={config.paths.cache_dir}"]
    env = _cli_env(OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{receiver.server_port}", OTEL_SERVICE_NAME="semantica-ci")
    asked = subprocess.run([sys.executable, "-m", "jobs.cli", "query", "add two amounts", "--json", "--no-daemon", *sets,
                            "--set", "observability.json_logs=true", "--set", "observability.log_level=DEBUG"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
    assert asked.returncode == 0, asked.stderr[-3000:]
    answer = json.loads(asked.stdout)
    received = receiver.spans()
    assert {service for service, _ in received} == {"semantica-ci"}
    names = {name for _, name in received}
    assert {"intent", "vector", "lexical", "symbol", "fusion", "context"} <= names, names
    assert set(answer["timings_ms"]) <= names | {"total"}  # the same names as --explain's timings
    lines = [ln for ln in asked.stderr.splitlines() if ln.strip()]
    assert lines and all(isinstance(json.loads(ln), dict) for ln in lines), lines[:5]  # DEBUG: there are log lines


def test_the_cli_error_is_a_json_line_with_json_logs(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "jobs.cli", "query", "x", "--repo", "no/such", "--no-daemon", "--set",
                           f"paths.index_root={tmp_path}", "--set", "observability.json_logs=true"],
                          cwd=tmp_path, env=_cli_env(), capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
    assert done.returncode != 0
    lines = [json.loads(ln) for ln in done.stderr.splitlines() if ln.strip()]
    assert lines and lines[-1]["level"] == "ERROR" and "no/such" in lines[-1]["message"]


def test_exporter_choice_from_the_environment() -> None:
    off = ObservabilityConfig()
    assert observability.trace_exporters(off, {}) == []
    assert observability.trace_exporters(off, {"OTEL_TRACES_EXPORTER": "console,otlp"}) == ["console", "otlp"]
    assert observability.trace_exporters(off, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}) == ["otlp"]
    assert observability.trace_exporters(ObservabilityConfig(otlp_endpoint="http://c:4318/v1/traces"),
                                         {"OTEL_TRACES_EXPORTER": "none"}) == []
    with pytest.raises(observability.ObservabilityError, match="zipkin"):
        observability.trace_exporters(off, {"OTEL_TRACES_EXPORTER": "zipkin"})


def test_console_exporter_writes_the_spans(capfd: pytest.CaptureFixture[str]) -> None:
    observability.disable()
    try:
        observability.configure(ObservabilityConfig(), {"OTEL_TRACES_EXPORTER": "console"})
        with observability.span("console-probe"):
            pass
        observability._state["provider"].force_flush()  # noqa: SLF001
    finally:
        observability.disable()
    assert '"name": "console-probe"' in capfd.readouterr().err


def test_a_library_debug_logger_is_held_at_the_configured_level(capfd: pytest.CaptureFixture[str]) -> None:
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    noisy = logging.getLogger("bm25s-like")
    noisy.setLevel(logging.DEBUG)  # what bm25s does at import
    try:
        observability.install_logs("INFO")
        noisy.debug("building index from tokens")
        noisy.warning("a real warning")
    finally:
        root.handlers, root.level = saved
    err = capfd.readouterr().err
    assert "a real warning" in err and "building index" not in err

"""Traces and structured logs for the query path, off by default and free when off.

Tracing: every query stage (`serving.pipeline.StageTimer.run`: intent, each retriever, fusion, each
reranker, localize, context, ...) becomes an OpenTelemetry span named like its `--explain` timing,
nested under the request's span (HTTP or MCP). Nothing of OpenTelemetry is imported until tracing is
turned on (`observability.tracing: true`, or an `otlp_endpoint`), so the CLI query path stays light.
Spans go to OTLP over HTTP when `otlp_endpoint` is set (needs `opentelemetry-exporter-otlp-proto-http`),
else nowhere but the in-process provider (tests read it with the SDK's InMemorySpanExporter).
OpenTelemetry's standard environment variables do the same on every front (CLI, HTTP, MCP, each Serve
replica), with no config change: `OTEL_TRACES_EXPORTER` (`otlp`, `console`, both comma-separated, or
`none`), `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT` (either alone turns OTLP
on) and `OTEL_SERVICE_NAME` (over `service_name`).

Logs: one root handler at `log_level`, so a library that sets its own logger to DEBUG (bm25s does) stays
quiet below it; `json_logs: true` formats every log record as one JSON object carrying the request id of the
request being served (`X-Request-ID`, taken from the client or made here), and the trace id when
tracing is on. `access_log: true` adds one line per HTTP request (method, path, status, duration).

Across processes (Ray Serve: the ingress calls each stage's deployment through a handle) the request
travels as a carrier of W3C headers (`carrier()`: `traceparent`, `tracestate`, `x-request-id`); the
replica re-attaches it (`joined`), so its spans join the one trace and its log lines carry the same
request id. An HTTP request that arrives with a `traceparent` joins the caller's trace the same way.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import json
import logging
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from semantica.config import ObservabilityConfig

REQUEST_ID_HEADER = "x-request-id"
TRACEPARENT_HEADER = "traceparent"
ACCESS_LOGGER = "semantica.access"
MAX_REQUEST_ID_CHARS = 128
TRACER_NAME = "semantica"
ENV_EXPORTERS = "OTEL_TRACES_EXPORTER"
ENV_OTLP_ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
ENV_OTLP_PROTOCOLS = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
ENV_SERVICE_NAME = "OTEL_SERVICE_NAME"
OTLP, CONSOLE, NONE = "otlp", "console", "none"
OTLP_HTTP_PROTOCOL = "http/protobuf"
TEXT_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("semantica_request_id", default="")
_state: dict[str, Any] = {"tracer": None, "provider": None}


class ObservabilityError(RuntimeError):
    """Tracing was configured but cannot start (e.g. the OTLP exporter is not installed)."""


def configure(config: ObservabilityConfig, environ: Mapping[str, str] | None = None) -> None:
    """Turn tracing and JSON logs on as `config` and the OTEL_* environment say (idempotent; a no-op when all
    are off). ObservabilityError when an exporter is asked for that cannot run."""
    env = os.environ if environ is None else environ
    if config.json_logs:
        install_json_logs(config.log_level)
    exporters = trace_exporters(config, env)
    if not (config.tracing or exporters) or _state["tracer"] is not None:
        return
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    # Resource.create reads OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES itself; the config names the service otherwise
    named = {} if env.get(ENV_SERVICE_NAME) else {"service.name": config.service_name}
    provider = TracerProvider(resource=Resource.create(named))
    for name in exporters:
        exporter = _otlp_exporter(config, env) if name == OTLP else ConsoleSpanExporter(out=sys.stderr)
        provider.add_span_processor(BatchSpanProcessor(exporter))
    atexit.register(provider.shutdown)  # a CLI run ends before the batch interval: flush its spans on exit
    enable(provider)


def trace_exporters(config: ObservabilityConfig, env: Mapping[str, str]) -> list[str]:
    """The exporters to run: OTEL_TRACES_EXPORTER when set (`none` = none), else OTLP when an endpoint is
    configured or in the environment."""
    given = [n.strip().lower() for n in env.get(ENV_EXPORTERS, "").split(",") if n.strip()]
    unknown = sorted(set(given) - {OTLP, CONSOLE, NONE})
    if unknown:
        raise ObservabilityError(f"{ENV_EXPORTERS}={env[ENV_EXPORTERS]!r}: unknown exporter(s) {unknown}; "
                                 f"use {OTLP}, {CONSOLE} or {NONE}")
    if given:
        return [] if NONE in given else list(dict.fromkeys(given))
    return [OTLP] if config.otlp_endpoint or any(env.get(k) for k in ENV_OTLP_ENDPOINTS) else []


def _otlp_exporter(config: ObservabilityConfig, env: Mapping[str, str]) -> Any:
    protocol = next((env[k] for k in ENV_OTLP_PROTOCOLS if env.get(k)), OTLP_HTTP_PROTOCOL)
    if protocol != OTLP_HTTP_PROTOCOL:
        raise ObservabilityError(f"OTLP protocol {protocol!r}: only {OTLP_HTTP_PROTOCOL} is supported")
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        raise ObservabilityError("OTLP export is configured but opentelemetry-exporter-otlp-proto-http "
                                 "is not installed (pip install opentelemetry-exporter-otlp-proto-http)") from None
    traces = env.get(ENV_OTLP_ENDPOINTS[0])
    base = env.get(ENV_OTLP_ENDPOINTS[1])
    endpoint = config.otlp_endpoint or traces or (f"{base.rstrip('/')}/v1/traces" if base else None)
    return OTLPSpanExporter(endpoint=endpoint)


def enable(provider: Any) -> None:
    """Trace with this TracerProvider (tests pass one with an InMemorySpanExporter)."""
    _state["provider"] = provider
    _state["tracer"] = provider.get_tracer(TRACER_NAME)


def disable() -> None:
    _state["provider"] = _state["tracer"] = None


def enabled() -> bool:
    return _state["tracer"] is not None


def current_context() -> Any:
    """The active trace context (to parent spans started in worker threads), or None when tracing is off."""
    if _state["tracer"] is None:
        return None
    from opentelemetry import context

    return context.get_current()


@contextlib.contextmanager
def span(name: str, parent: Any = None, **attributes: Any) -> Iterator[None]:
    """A span named `name` under the current span, else under `parent` (a context from another thread)."""
    tracer = _state["tracer"]
    if tracer is None:
        yield
        return
    from opentelemetry import trace

    here = trace.get_current_span().get_span_context()
    context = None if here.is_valid or parent is None else parent
    with tracer.start_as_current_span(name, context=context, attributes=_attributes(attributes)):
        yield


def carrier() -> dict[str, str]:
    """The current request as W3C headers for a call into another process: `traceparent` (and
    `tracestate`) of the active span when tracing is on, and `x-request-id`. Empty when there is neither."""
    out: dict[str, str] = {}
    if _state["tracer"] is not None:
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        TraceContextTextMapPropagator().inject(out)
    request_id = request_id_var.get()
    if request_id:
        out[REQUEST_ID_HEADER] = request_id
    return out


def remote_parent(headers: dict[str, str]) -> Any:
    """The trace context a `traceparent` header names (None when tracing is off or there is none)."""
    if _state["tracer"] is None or not headers.get(TRACEPARENT_HEADER):
        return None
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    return TraceContextTextMapPropagator().extract(headers)


@contextlib.contextmanager
def request_scope(request_id: str) -> Iterator[None]:
    """`request_id` is the current request's id inside the block (a worker thread, a replica's call)."""
    if not request_id or request_id_var.get() == request_id:
        yield
        return
    token = request_id_var.set(request_id)
    try:
        yield
    finally:
        request_id_var.reset(token)


@contextlib.contextmanager
def joined(headers: dict[str, str] | None, name: str, **attributes: Any) -> Iterator[None]:
    """Serve a call made with `carrier()`'s headers: its request id is current, and (tracing on) a span
    `name` opens as a child of the caller's span, so another process's spans join the caller's trace."""
    headers = headers or {}
    given = headers.get(REQUEST_ID_HEADER)
    with request_scope(new_request_id(given) if given else ""):
        tracer = _state["tracer"]
        if tracer is None:
            yield
            return
        with tracer.start_as_current_span(name, context=remote_parent(headers), attributes=_attributes(attributes)):
            yield


def _attributes(values: dict[str, Any]) -> dict[str, Any]:
    request_id = request_id_var.get()
    out = {k: v for k, v in values.items() if isinstance(v, str | int | float | bool)}
    return {**out, "semantica.request_id": request_id} if request_id else out


def new_request_id(given: str | None) -> str:
    """The client's request id when it is a sane token, else a fresh one."""
    if given and len(given) <= MAX_REQUEST_ID_CHARS and given.isprintable() and " " not in given:
        return given
    return uuid.uuid4().hex


class RequestContextMiddleware:
    """ASGI: one request id per HTTP request (`X-Request-ID` in and out, in every log record) and, with
    tracing on, the request's root span `HTTP METHOD /path` that the stage spans nest under (a child of the
    client's span when it sent a `traceparent`). `on_error(exc)` answers an exception nothing below
    answered (an ASGI app, e.g. the generic JSON 500), while the request id is still current.
    `behind_proxy`: Ray Serve's HTTP proxy already chose the id (the client's, else a fresh one), passes it
    in `X-Request-ID` and echoes it in the response: take it as it is and do not echo it a second time."""

    def __init__(self, app: Any, access_log: bool = False, on_error: Callable[[BaseException], Any] | None = None,
                 behind_proxy: bool = False) -> None:
        self.app, self.access_log, self.on_error, self.behind_proxy = app, access_log, on_error, behind_proxy

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        given = headers.get(REQUEST_ID_HEADER)
        request_id = given if self.behind_proxy and given else new_request_id(given)
        token = request_id_var.set(request_id)
        started = time.perf_counter()
        status = {"code": 0}

        async def send_with_id(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message.get("status", 0)
                if not self.behind_proxy:
                    message = {**message, "headers": [*message.get("headers", []),
                                                      (REQUEST_ID_HEADER.encode(), request_id.encode())]}
            await send(message)

        method, path = scope.get("method", ""), scope.get("path", "")
        try:
            with span(f"HTTP {method} {path}", remote_parent(headers), **{"http.route": path}):
                try:
                    await self.app(scope, receive, send_with_id)
                except Exception as exc:
                    if self.on_error is None or status["code"]:
                        raise
                    await self.on_error(exc)(scope, receive, send_with_id)
        finally:
            if self.access_log:
                _log_access(method, path, status["code"], (time.perf_counter() - started) * 1000)
            request_id_var.reset(token)


def _log_access(method: str, path: str, status: int, ms: float) -> None:
    """One line per HTTP request, at the level its status deserves (an error body's request id is on it)."""
    level = logging.ERROR if status >= 500 or not status else logging.WARNING if status >= 400 else logging.INFO
    logging.getLogger(ACCESS_LOGGER).log(level, "%s %s %s %.1fms", method, path, status or "-", ms,
                                         extra={"http": {"method": method, "path": path, "status": status,
                                                         "duration_ms": round(ms, 1)}})


class JsonLogFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, request id, trace id, exception."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname, "logger": record.name, "message": record.getMessage(),
        }
        request_id = request_id_var.get()
        if request_id:
            entry["request_id"] = request_id
        trace_id = _trace_id()
        if trace_id:
            entry["trace_id"] = trace_id
        if isinstance(getattr(record, "http", None), dict):  # the access log's fields (`_log_access`)
            entry["http"] = record.http
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def _trace_id() -> str:
    if _state["tracer"] is None:
        return ""
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    return f"{context.trace_id:032x}" if context.is_valid else ""


def install_json_logs(level: str = "INFO") -> logging.Handler:
    """Route the root logger to stderr as JSON lines (replacing its handlers)."""
    return install_logs(level, JsonLogFormatter())


def install_logs(level: str = "INFO", formatter: logging.Formatter | None = None) -> logging.Handler:
    """One root handler on stderr at `level` (replacing the root's handlers): the handler's level holds every
    logger's records, so a library that set its own logger to DEBUG prints nothing below `level`."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter or logging.Formatter(TEXT_LOG_FORMAT))
    handler.setLevel(level.upper())
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level.upper())
    return handler

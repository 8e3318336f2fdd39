"""Prometheus metrics of one ingress replica (`GET /metrics`, text format, official `prometheus_client`).

Each app owns its `CollectorRegistry` (several apps in one process, e.g. tests, never collide). Snapshot age
and health per repository and the index build counters are computed at scrape time: the builds are recorded
by `semantica index` / `index-batch` in `metrics.build_stats_file` (see `semantica.ondisk.build_stats`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from semantica.config import MetricsConfig
from semantica.errors import ErrorKind

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
OTHER_ROUTE = "other"


class RepoCollector(Collector):
    """Per-repository snapshot age / up, and index builds, read when Prometheus scrapes."""

    def __init__(self, repo_status: Callable[[], list[dict[str, Any]]], build_stats: Callable[[], dict[str, Any]]):
        self.repo_status, self.build_stats = repo_status, build_stats

    def collect(self) -> Iterator[Any]:
        age = GaugeMetricFamily("semantica_snapshot_age_seconds", "Age of the served snapshot", labels=["repo"])
        up = GaugeMetricFamily("semantica_snapshot_up", "1 when the repository's snapshot opens, else 0",
                               labels=["repo"])
        for repo in self.repo_status():
            up.add_metric([repo["repo"]], 1.0 if repo["status"] == "ok" else 0.0)
            if repo.get("age_s") is not None:
                age.add_metric([repo["repo"]], repo["age_s"])
        yield age
        yield up
        stats = self.build_stats()
        builds = CounterMetricFamily("semantica_index_builds", "Index builds by outcome", labels=["repo", "outcome"])
        seconds = CounterMetricFamily("semantica_index_build_seconds", "Total seconds spent in index builds",
                                      labels=["repo"])
        for repo, row in sorted(stats.items()):
            builds.add_metric([repo, "ok"], row.get("ok", 0))
            builds.add_metric([repo, "failed"], row.get("failed", 0))
            seconds.add_metric([repo], row.get("seconds", 0.0))
        yield builds
        yield seconds


class HttpMetrics:
    """The serving counters and histograms; `observe_*` are called by the middleware and the routes."""

    def __init__(self, config: MetricsConfig, routes: tuple[str, ...],
                 repo_status: Callable[[], list[dict[str, Any]]], build_stats: Callable[[], dict[str, Any]]) -> None:
        self.routes = routes
        self.registry = CollectorRegistry()
        buckets = tuple(config.latency_buckets_s)
        self.requests = Counter("semantica_http_requests", "HTTP requests by route and status",
                                ["route", "status"], registry=self.registry)
        self.errors = Counter("semantica_http_errors", "HTTP error answers (4xx/5xx) by status; 499: the client "
                              "hung up first", ["status"], registry=self.registry)
        self.shed = Counter("semantica_http_shed", "Requests refused or cut by admission control, by reason",
                            ["reason"], registry=self.registry)
        self.latency = Histogram("semantica_http_request_seconds", "HTTP request latency", ["route"],
                                 buckets=buckets, registry=self.registry)
        self.stage_latency = Histogram("semantica_stage_seconds", "Query stage latency", ["stage"],
                                       buckets=buckets, registry=self.registry)
        self.degraded = Counter("semantica_degraded", "Answers that lost a stage, by stage", ["stage"],
                                registry=self.registry)
        self.in_flight = Gauge("semantica_http_in_flight", "Requests being answered", registry=self.registry)
        self.registry.register(RepoCollector(repo_status, build_stats))

    def route(self, path: str) -> str:
        return path if path in self.routes else OTHER_ROUTE  # bounded label values

    def observe_request(self, path: str, status: int, seconds: float) -> None:
        route = self.route(path)
        self.requests.labels(route, str(status)).inc()
        self.latency.labels(route).observe(seconds)
        if status >= 400:
            self.errors.labels(str(status)).inc()

    def observe_search(self, answer: dict[str, Any]) -> None:
        for stage, ms in (answer.get("timings_ms") or {}).items():
            self.stage_latency.labels(stage).observe(ms / 1000.0)
        for item in answer.get("degraded") or []:
            self.degraded.labels(str(item.get("stage", "unknown"))).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


class MetricsMiddleware:
    """ASGI, outermost: counts every answer (401s, 413s and shed 503s included) and its latency."""

    def __init__(self, app: Any, metrics: HttpMetrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status: list[int | None] = [None]
        gone = [False]

        async def record(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        async def watch(message_source: Any = receive) -> dict[str, Any]:
            message = await message_source()
            gone[0] = gone[0] or message["type"] == "http.disconnect"
            return message

        self.metrics.in_flight.inc()
        try:
            await self.app(scope, watch, record)
        except asyncio.CancelledError:  # Serve cancels the request of a client that hung up
            gone[0] = True
            raise
        finally:
            self.metrics.in_flight.dec()
            self.metrics.observe_request(scope["path"], _final_status(status[0], gone[0]), time.perf_counter() - start)


def _final_status(sent: int | None, client_gone: bool) -> int:
    """What the request counts as: the status sent, else 499 when the client hung up first (an impatient
    client is not a server error), else 500 (the app ended without an answer)."""
    if sent is not None:
        return sent
    return ErrorKind.CLIENT_CLOSED.http_status if client_gone else ErrorKind.INTERNAL.http_status

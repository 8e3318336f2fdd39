"""A stage deployment that records its spans in memory, and a driver that calls it across a real process
boundary (test_serve_trace_cluster). In a module of its own so that Ray's worker processes can import it
by its package path (pytest imports test modules by their bare names)."""

from __future__ import annotations

import os
from typing import Any

from ray import serve

from serving.ray.app import StageDeployment

REQUEST_ID = "cluster-req-1"
REPLICA_CPUS = 0.1  # fractional: a whole CPU per replica never places on a 2-core node


def _memory_spans() -> Any:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from semantica.runtime import observability

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    observability.enable(provider)
    return exporter


def _rows(exporter: Any) -> list[dict[str, Any]]:
    return [{"name": s.name, "trace": s.context.trace_id, "span": s.context.span_id,
             "parent": s.parent.span_id if s.parent else None, "remote": bool(s.parent and s.parent.is_remote),
             "request_id": s.attributes.get("semantica.request_id"), "pid": os.getpid()}
            for s in exporter.get_finished_spans()]


@serve.deployment
class RecordingStage(StageDeployment.func_or_class):
    """The real stage deployment, recording its spans in memory (its process's exporter) for the test."""

    def __init__(self, config: dict[str, Any], stage: str) -> None:
        self.exporter = _memory_spans()
        super().__init__(config, stage)

    def spans(self) -> list[dict[str, Any]]:
        return _rows(self.exporter)


def call_across_processes(config_values: dict[str, Any]) -> dict[str, Any]:
    """In a fresh process: a loopback Ray node, the Intent deployment, one traced call through the proxy."""
    import ray

    from semantica.config import config_from_dict
    from semantica.runtime import observability
    from semantica.runtime.ray_runtime import start_ray
    from serving.ray.remote import _RemoteIntent

    config = config_from_dict(config_values)
    start_ray(config.ray)
    try:
        serve.start(proxy_location="Disabled")  # no HTTP proxy: no port to share with other Serve apps here
        app = RecordingStage.options(name="Intent", ray_actor_options={"num_cpus": REPLICA_CPUS}).bind(
            config_values, "Intent")
        handle = serve.run(app, name="trace-check", route_prefix=None)
        exporter = _memory_spans()
        proxy = _RemoteIntent(handle, "Intent", config.retrieval.timeout_s * 10, mandatory=True)
        token = observability.request_id_var.set(REQUEST_ID)
        try:
            with observability.span("intent"):
                intent = proxy.classify("where is the cart total computed")
        finally:
            observability.request_id_var.reset(token)
        return {"caller": _rows(exporter), "replica": handle.spans.remote().result(timeout_s=300),
                "intent": type(intent).__name__}
    finally:
        serve.shutdown()
        ray.shutdown()

"""The real ingress HTTP app in-process: stage deployments in Serve's local testing mode (no cluster), the
`IngressCore` over their handles, and an httpx client on the ASGI app (no socket, no proxy)."""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import Any

import httpx
import yaml
from ray import serve

from semantica.config import Config, config_from_dict, config_to_dict
from serving.ray.app import IngressCore, deployment_options, ingress_app, stage_bindings

BASE_URL = "http://localhost"
GATE = threading.Event()
"""Opened by tests whose stage deployments must hold a request in flight (see test_http_admission)."""


def local_stage_handles(config: Config, **overrides: Any) -> dict[str, Any]:
    """One local-testing-mode handle per stage deployment (`overrides` swaps a stage class)."""
    tag = uuid.uuid4().hex[:6]
    return {name: serve.run(app, name=f"{name}-{tag}", route_prefix=None, _local_testing_mode=True)
            for name, app in stage_bindings(config, deployment_options(None), overrides).items()}


def variant(config: Config, *overrides: str) -> Config:
    """A copy of `config` with `section.field=value` overrides (YAML values, typed by the config loader)."""
    values = config_to_dict(config)
    for override in overrides:
        dotted, value = override.split("=", 1)
        section, key = dotted.split(".")
        values[section][key] = yaml.safe_load(value)
    return config_from_dict(values)


def make_core(config: Config, handles: dict[str, Any]) -> IngressCore:
    return IngressCore(config_to_dict(config), **handles)


def client(core: IngressCore, headers: dict[str, str] | None = None) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=ingress_app(core), raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url=BASE_URL, headers=headers or {}, timeout=120)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def call_asgi(app: Any, method: str, path: str, chunks: list[bytes],
                    headers: list[tuple[bytes, bytes]]) -> tuple[int, bytes]:
    """Drive the ASGI app with a body streamed in `chunks` (no Content-Length): what a chunked upload does."""
    pending = list(chunks)
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if pending:
            body = pending.pop(0)
            return {"type": "http.request", "body": body, "more_body": bool(pending)}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "path": path,
             "raw_path": path.encode(), "query_string": b"", "root_path": "", "scheme": "http",
             "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 5000),
             "headers": [(b"host", b"localhost"), *headers]}
    await app(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, body

"""`semantica serve`: the Ray Serve query graph (serving/ray/app.py) over HTTP, until SIGINT/SIGTERM.

Local Ray by default, listening on 127.0.0.1 only (`semantica.runtime.ray_runtime.start_ray`; every replica asks
for a fraction of a CPU, see
conf/serve.yaml), or an existing cluster with `--ray-address`. `serve run conf/serve.yaml` runs the same
application through Serve's own CLI.
"""

from __future__ import annotations

import argparse
import importlib
import multiprocessing
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from jobs.cli import add_common, config_from_args
from semantica.config import Config
from serving.api.catalog import ROUTES

APP_NAME = "semantica"
SERVER_START_GRACE_S = 60.0  # a spawned interpreter imports Ray, torch and the app before Serve starts
SERVER_STOP_GRACE_S = 60.0


def register(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser(
        "serve", help="serve the HTTP search API with Ray Serve",
        description="Start Ray Serve with one deployment per query stage behind a FastAPI ingress (routes below, "
                    "the OpenAPI document at /docs). New snapshots are picked up without restart. Stops cleanly on "
                    "SIGINT/SIGTERM.",
        epilog="routes:\n" + "\n".join(f"  {path:<14} {text}" for path, text in ROUTES.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("--host", default=None, help="bind address (default serve.host: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port (default serve.port: 8000)")
    serve.add_argument("--serve-config", metavar="FILE", default=None,
                       help="deployment options (default conf/serve.yaml)")
    serve.add_argument("--ray-address", metavar="ADDR", default=None, help="connect to this Ray cluster")
    add_common(serve)
    serve.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    host = args.host or config.serve.host
    port = args.port or config.serve.port
    config.serve.host = host  # the ingress derives auth (loopback or not) and the Host allowlist from it
    announce_token(config)
    stop = threading.Event()

    def ready() -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):  # after ray.init, which installs its own SIGTERM handler
            signal.signal(sig, lambda *_: stop.set())
        print(f"semantica serving on http://{host}:{port} (docs at /docs); Ctrl-C to stop", file=sys.stderr)

    serve_until(config, host, port, stop, args.ray_address or config.ray.address, args.serve_config, on_ready=ready)
    return 0


def serve_until(config: Config, host: str, port: int, stop: Any, address: str = "", serve_config: str | None = None,
                overrides: dict[str, str] | None = None, on_ready: Callable[[], None] | None = None) -> None:
    """Start Ray (loopback-only when local) and the Serve graph, answer until `stop` is set, then shut down.

    `overrides` replaces deployments by import path ("module:Class"), for tests that inject faults.
    """
    from ray import serve

    from semantica.runtime.ray_runtime import start_ray
    from serving.ray.app import build_graph, deployment_options

    start_ray(config.ray, address, serve=True)
    try:
        # the proxy's own limit: a request held by a replica that died (ray.kill, OOM) ends with 408, not a hang
        serve.start(http_options={"host": host, "port": port, "request_timeout_s": proxy_timeout_s(config)})
        replaced = {name: _import(path) for name, path in (overrides or {}).items()}
        app = build_graph(config, deployment_options(serve_config), replaced or None)
        ready = threading.Event()
        failure: list[BaseException] = []

        def deploy() -> None:
            try:
                serve.run(app, name=APP_NAME, route_prefix="/")
            except BaseException as exc:  # noqa: BLE001 - reported below
                failure.append(exc)
            ready.set()

        threading.Thread(target=deploy, daemon=True).start()
        if not ready.wait(config.ray.startup_timeout_s) or failure:
            reason = failure[0] if failure else f"not ready after ray.startup_timeout_s={config.ray.startup_timeout_s}s"
            raise RuntimeError(f"Serve could not start the deployments: {reason}")
        if on_ready:
            on_ready()
        stop.wait()
        print("shutting down: draining in-flight requests", file=sys.stderr)
        print(f"drain: {drain_ingress(config.admission.drain_timeout_s)}", file=sys.stderr)
    finally:
        import ray

        try:
            serve.shutdown()
        except Exception as exc:  # noqa: BLE001 - a dead controller or proxy must not hide why serving ended
            print(f"serve shutdown: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                  file=sys.stderr)
        finally:
            ray.shutdown()


def proxy_timeout_s(config: Config) -> float:
    """Serve's proxy limit: past our own deadline (504 comes first), so only a request nobody answers hits it."""
    return config.admission.deadline_s + config.admission.proxy_grace_s


def announce_token(config: Config) -> None:
    """Create the API token file when auth is on and say where it is (never the token itself)."""
    from serving.api.http.security import auth_required, ensure_token_file

    if not auth_required(config.auth, config.serve.host):
        print(f"auth: off (bound to loopback {config.serve.host}, auth.mode={config.auth.mode})", file=sys.stderr)
        return
    path, created = ensure_token_file(config.auth.token_file)
    config.auth.token_file = str(path)  # absolute: replicas need not share the driver's working directory
    print(f"auth: bearer token {'created in' if created else 'read from'} {path} (mode 0600); clients send "
          f"`Authorization: Bearer $(cat {path})`", file=sys.stderr)
    if config.auth.tokens_file:
        print(f"auth: scoped tokens from {config.auth.tokens_file}", file=sys.stderr)
    if config.serve.host in ("0.0.0.0", "::") and not config.auth.allowed_hosts:
        print("auth: only Host headers localhost/127.0.0.1/[::1] are answered; add this server's DNS name or "
              "address to auth.allowed_hosts (e.g. --set auth.allowed_hosts=[search.example.com])", file=sys.stderr)


def drain_ingress(timeout_s: float) -> dict:
    """Tell every ingress replica to refuse new requests (503) and wait for the in-flight ones."""
    from ray import serve

    handle = serve.get_app_handle(APP_NAME)
    status = serve.status().applications.get(APP_NAME)
    replicas = 1
    if status is not None and "Ingress" in status.deployments:
        replicas = max(1, sum(status.deployments["Ingress"].replica_states.values()))
    # each call lands on one replica; a draining replica still answers handle calls, so ask each in turn
    answers = [handle.drain.remote(timeout_s) for _ in range(replicas)]
    return {"replicas": replicas, "drained": all(a.result(timeout_s=timeout_s + 5)["drained"] for a in answers)}


def _import(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _serve_child(config_dict: dict[str, Any], host: str, port: int, overrides: dict[str, str] | None,
                 ready: Any, stop: Any) -> None:
    from semantica.config import config_from_dict

    try:
        serve_until(config_from_dict(config_dict), host, port, stop, overrides=overrides, on_ready=lambda: ready.put("ok"))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        ready.put(f"{type(exc).__name__}: {exc}")


@contextmanager
def server_process(config: Config, port: int, host: str = "127.0.0.1",
                   overrides: dict[str, str] | None = None) -> Iterator[str]:
    """The HTTP API in its own freshly spawned process (Ray must not start where a JVM runs); yields its URL."""
    from semantica.config import config_to_dict

    ctx = multiprocessing.get_context("spawn")
    ready, stop = ctx.Queue(), ctx.Event()
    process = ctx.Process(target=_serve_child, args=(config_to_dict(config), host, port, overrides, ready, stop),
                          name="semantica-serve")
    process.start()
    try:
        status = ready.get(timeout=config.ray.startup_timeout_s + SERVER_START_GRACE_S)
        if status != "ok":
            raise RuntimeError(f"the server process failed to start: {status}")
        yield f"http://{host}:{port}"
    finally:
        stop.set()
        process.join(SERVER_STOP_GRACE_S)
        if process.is_alive():
            process.kill()
            process.join()

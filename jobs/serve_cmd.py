"""`semantica serve`: the Ray Serve query graph (serving/app.py) over HTTP, until SIGINT/SIGTERM.

Local Ray by default (`ray.init(num_cpus=ray.num_cpus)`; every replica asks for a fraction of a CPU, see
conf/serve.yaml), or an existing cluster with `--ray-address`. `serve run conf/serve.yaml` runs the same
application through Serve's own CLI.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from jobs.cli import add_common, config_from_args

APP_NAME = "semantica"


def register(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser(
        "serve", help="serve the HTTP search API with Ray Serve",
        description="Start Ray Serve with one deployment per query stage behind a FastAPI ingress: "
                    "POST /v1/search, POST /v1/feedback, GET /v1/repos, GET /healthz, docs at /docs. "
                    "New snapshots are picked up without restart. Stops cleanly on SIGINT/SIGTERM.",
    )
    serve.add_argument("--host", default=None, help="bind address (default serve.host: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port (default serve.port: 8000)")
    serve.add_argument("--serve-config", metavar="FILE", default=None,
                       help="deployment options (default conf/serve.yaml)")
    serve.add_argument("--ray-address", metavar="ADDR", default=None, help="connect to this Ray cluster")
    add_common(serve)
    serve.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    import ray
    from ray import serve

    from serving.app import build_graph, deployment_options

    config = config_from_args(args)
    host = args.host or config.serve.host
    port = args.port or config.serve.port
    config.serve.host = host  # the ingress derives auth (loopback or not) and the Host allowlist from it
    announce_token(config)
    address = args.ray_address or config.ray.address
    stop = threading.Event()
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        ray.init(num_cpus=config.ray.num_cpus, include_dashboard=False, log_to_driver=False)
    for sig in (signal.SIGINT, signal.SIGTERM):  # after ray.init, which installs its own SIGTERM handler
        signal.signal(sig, lambda *_: stop.set())
    try:
        serve.start(http_options={"host": host, "port": port})
        app = build_graph(config, deployment_options(args.serve_config))
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
        print(f"semantica serving on http://{host}:{port} (docs at /docs); Ctrl-C to stop", file=sys.stderr)
        stop.wait()
        print("shutting down: draining in-flight requests", file=sys.stderr)
        print(f"drain: {drain_ingress(config.admission.drain_timeout_s)}", file=sys.stderr)
    finally:
        try:
            serve.shutdown()
        finally:
            ray.shutdown()
    return 0


def announce_token(config) -> None:  # noqa: ANN001 - semantica.config.Config
    """Create the API token file when auth is on and say where it is (never the token itself)."""
    from serving.security import auth_required, ensure_token_file

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

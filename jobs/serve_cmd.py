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
        print("shutting down", file=sys.stderr)
    finally:
        try:
            serve.shutdown()
        finally:
            ray.shutdown()
    return 0

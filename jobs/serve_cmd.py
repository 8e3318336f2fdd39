"""`semantica serve`: the Ray Serve query graph behind a FastAPI ingress (see serving/app.py)."""

from __future__ import annotations

import argparse

from jobs.cli import add_common, config_from_args


def register(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser("serve", help="serve the HTTP search API with Ray Serve")
    serve.add_argument("--host", default=None)
    serve.add_argument("--port", type=int, default=None)
    add_common(serve)
    serve.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    config_from_args(args)
    raise RuntimeError("not ready yet")

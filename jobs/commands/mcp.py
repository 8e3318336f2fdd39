"""`semantica mcp`: serve the indexes to code agents over the Model Context Protocol (stdio or HTTP)."""

from __future__ import annotations

import argparse
import enum
import os
import sys

from jobs.cli import add_common, config_from_args
from serving.api.catalog import TOOLS


class Transport(enum.Enum):
    STDIO = "stdio"
    STREAMABLE_HTTP = "streamable-http"

    @staticmethod
    def parse(value: str) -> Transport:
        try:
            return Transport(value)
        except ValueError:
            valid = ", ".join(t.value for t in Transport)
            raise ValueError(f"unknown MCP transport {value!r}; valid: {valid}") from None


def register(sub: argparse._SubParsersAction) -> None:
    mcp = sub.add_parser(
        "mcp", help="serve the indexes over MCP (for code agents)",
        description="Run an MCP server (official SDK) over the same pipeline as `semantica query`: stdio for a local "
                    "agent (the client starts this command), streamable-http to serve several agents.",
        epilog="tools:\n" + "\n".join(f"  {name:<18} {text.split('. ')[0].rstrip('.')}" for name, text in TOOLS.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mcp.add_argument("--transport", choices=[t.value for t in Transport], default=None,
                     help="stdio (default from conf: mcp.transport) or streamable-http")
    mcp.add_argument("--host", default=None, help="HTTP bind address (default mcp.host, loopback)")
    mcp.add_argument("--port", type=int, default=None, help="HTTP port (default mcp.port)")
    mcp.add_argument("--no-sync", action="store_true", help="do not offer the sync tool (read-only server)")
    add_common(mcp)
    mcp.set_defaults(handler=run_mcp)


def build(config, allow_sync: bool = True):  # noqa: ANN001, ANN201 (imports stay lazy for a fast --help)
    """The MCP server over one SearchPipeline and, unless read-only, the indexer's syncer."""
    from serving.api.mcp.server import SemanticaTools, build_server
    from serving.pipeline import SearchPipeline

    syncer = None
    if allow_sync:
        from pipelines.sync import RepoSyncer

        repo_syncer = RepoSyncer(config)

        def syncer(**kwargs):  # noqa: ANN003, ANN202
            return repo_syncer.sync(**kwargs).to_dict()

    from jobs.mcp_plan import plan_tool

    return build_server(SemanticaTools(config, SearchPipeline(config), syncer), [plan_tool(config)])


def serve_http(config, server, host: str, port: int) -> None:  # noqa: ANN001 (imports stay lazy)
    """Streamable HTTP behind `serve`'s rules: a token off loopback, Host/Origin allow-list, one Host header."""
    import anyio
    import uvicorn

    from serving.api.http.security import TokenStore, auth_required, ensure_token_file
    from serving.api.mcp.http_guard import McpHttpGuard, transport_security

    tokens = None
    if auth_required(config.auth, host):
        path, created = ensure_token_file(config.auth.token_file)
        config.auth.token_file = str(path)
        tokens = TokenStore.load(config.auth)
        print(f"auth: bearer token {'created in' if created else 'read from'} {path} (mode 0600); clients send "
              f"`Authorization: Bearer $(cat {path})`", file=sys.stderr)
    else:
        print(f"auth: off (bound to loopback {host}, auth.mode={config.auth.mode})", file=sys.stderr)
    app = server.streamable_http_app(streamable_http_path=config.mcp.path, stateless_http=config.mcp.stateless_http,
                                     transport_security=transport_security(config.auth, host), host=host)
    uvicorn_config = uvicorn.Config(McpHttpGuard(app, tokens), host=host, port=port, log_level="warning")
    anyio.run(uvicorn.Server(uvicorn_config).serve)


def run_mcp(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    transport = Transport.parse(args.transport or config.mcp.transport)
    server = build(config, allow_sync=not args.no_sync)
    if transport is Transport.STDIO:
        import anyio

        from serving.api.mcp.frames import run_stdio

        anyio.run(run_stdio, server)  # the SDK's stdio, answering every frame it cannot read
    else:
        serve_http(config, server, args.host or config.mcp.host, args.port or config.mcp.port)
    # The session is over and every snapshot is immutable: leave without interpreter teardown, where the
    # JVM (Lucene) and torch's thread pools have aborted the process ("corrupted double-linked list").
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)

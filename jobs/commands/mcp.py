"""`semantica mcp`: serve the indexes to code agents over the Model Context Protocol (stdio or HTTP)."""

from __future__ import annotations

import argparse
import enum
import os
import sys

from jobs.cli import add_common, config_from_args


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
        description="Run an MCP server (official SDK) with the tools search, get_context, list_repos, index_status "
                    "and sync over the same pipeline as `semantica query`. stdio for a local agent (the client "
                    "starts this command), streamable-http to serve several agents.",
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


def run_mcp(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    transport = Transport.parse(args.transport or config.mcp.transport)
    server = build(config, allow_sync=not args.no_sync)
    if transport is Transport.STDIO:
        import anyio

        from serving.api.mcp.frames import run_stdio

        anyio.run(run_stdio, server)  # the SDK's stdio, answering every frame it cannot read
    else:
        server.run("streamable-http", host=args.host or config.mcp.host, port=args.port or config.mcp.port,
                   streamable_http_path=config.mcp.path, stateless_http=config.mcp.stateless_http)
    # The session is over and every snapshot is immutable: leave without interpreter teardown, where the
    # JVM (Lucene) and torch's thread pools have aborted the process ("corrupted double-linked list").
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)

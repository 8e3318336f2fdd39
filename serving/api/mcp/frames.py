"""JSON-RPC errors for MCP frames the SDK cannot read, so every request with an id gets an answer.

The SDK's stdio transport hands a frame it cannot validate to the session as an exception, and the
session drops it: a client whose `tools/call` has list `params`, a lone surrogate (`"\\ud800"`) or a
line that is not JSON waits forever. `guarded_stdio` sits between that transport and the server and
answers each such frame itself: -32700 (not JSON), -32600 (not a JSON-RPC request), -32602 (a request
whose `params` is not an object or holds text that is not valid Unicode).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

log = logging.getLogger(__name__)
JSON_INVALID = "json_invalid"  # pydantic's error type for text that its JSON parser refuses


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any(0xD800 <= ord(ch) <= 0xDFFF for ch in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def _request_id(frame: Any) -> int | str | None:
    value = frame.get("id") if isinstance(frame, dict) else None
    return value if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)) else None


def _raw_frame(exc: ValidationError) -> tuple[bool, Any]:
    """(parsed, frame): the frame the SDK refused, re-read from the error's input."""
    for error in exc.errors():
        if error["type"] == JSON_INVALID:
            text = error.get("input")
            try:  # Python's parser keeps lone surrogates that pydantic's refuses
                return True, json.loads(text) if isinstance(text, str | bytes) else None
            except ValueError:
                return False, None
    for error in exc.errors():  # a structural error: the whole frame is the input at the top level
        if len(error["loc"]) <= 1 or error["type"] == "missing":
            return True, error.get("input")
    return True, None


def error_reply(exc: Exception) -> JSONRPCError | None:
    """The JSON-RPC error for a frame the transport could not read; None for a notification (no id
    and a method: JSON-RPC never answers one)."""
    if not isinstance(exc, ValidationError):
        return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=PARSE_ERROR, message=f"Parse error: {exc}"))
    parsed, frame = _raw_frame(exc)
    if not parsed:
        return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=PARSE_ERROR, message="Parse error: not JSON"))
    request_id = _request_id(frame)
    method = frame.get("method") if isinstance(frame, dict) else None
    if request_id is None and isinstance(method, str):
        log.info("dropped a malformed notification %r", method[:80])
        return None
    if not isinstance(frame, dict) or frame.get("jsonrpc") != "2.0" or not isinstance(method, str):
        message = "Invalid Request: batches are not supported" if isinstance(frame, list) else (
            "Invalid Request: expected a JSON-RPC 2.0 object with a string `method`")
        return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=INVALID_REQUEST, message=message))
    if "params" in frame and not isinstance(frame["params"], dict):
        message = f"Invalid params: `params` must be an object, got {type(frame['params']).__name__}"
    elif _has_lone_surrogate(frame.get("params")):
        message = "Invalid params: a string holds a lone surrogate (not valid Unicode)"
    elif _has_lone_surrogate(frame):
        return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(
            code=INVALID_REQUEST, message="Invalid Request: a string holds a lone surrogate (not valid Unicode)"))
    else:
        message = "Invalid params: " + "; ".join(e["msg"] for e in exc.errors()[:3])
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=INVALID_PARAMS, message=message))


@asynccontextmanager
async def guarded_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio transport, with every frame it cannot read answered by `error_reply`."""
    async with stdio_server() as (read_stream, write_stream):
        forward, server_reads = create_context_streams[SessionMessage | Exception](0)

        async def pump() -> None:
            async with forward:
                async for item in read_stream:
                    if not isinstance(item, Exception):
                        await forward.send(item)
                        continue
                    reply = error_reply(item)
                    if reply is not None:
                        await write_stream.send(SessionMessage(reply))

        async with anyio.create_task_group() as group:
            group.start_soon(pump)
            yield server_reads, write_stream
            group.cancel_scope.cancel()


async def run_stdio(server: MCPServer) -> None:
    """`MCPServer.run_stdio_async` over `guarded_stdio`."""
    lowlevel = server._lowlevel_server  # noqa: SLF001 (the SDK's own stdio runner reaches it the same way)
    async with guarded_stdio() as (read_stream, write_stream):
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

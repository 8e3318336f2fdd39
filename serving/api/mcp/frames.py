"""JSON-RPC errors for MCP frames the SDK cannot read, so every request with an id gets an answer.

The SDK's stdio transport hands a frame it cannot validate to the session as an exception, and the
session drops it: a client whose `tools/call` has list `params`, a lone surrogate (`"\\ud800"`) or a
line that is not JSON waits forever. `guarded_stdio` sits between that transport and the server and
answers each such frame itself: -32700 (not JSON), -32600 (not a JSON-RPC request), -32602 (a request
whose `params` is not an object or holds text that is not valid Unicode).

`ScreenedLines` reads stdin for the SDK and answers, before the SDK sees them, the frames the SDK would
drop or die on: a frame nested deeper than `MAX_FRAME_DEPTH` (Python's parser recurses; 500 levels ended
the server), a request whose `id` is not a string or an integer (the SDK reads it as a notification and
never answers), and a request before `initialize`.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import _claim_fd, _open_stdin_diversion, _UnownedTextWrapper, stdio_server
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

log = logging.getLogger(__name__)
JSON_INVALID = "json_invalid"  # pydantic's error type for text that its JSON parser refuses
MAX_FRAME_DEPTH = 64
"""JSON nesting a frame may have: MCP frames nest under ten; deeper is refused before any recursive parse."""
BEFORE_INITIALIZE = frozenset({"initialize", "ping"})
"""The requests a client may send before `initialize` (MCP lifecycle)."""


def nesting_depth(text: str) -> int:
    """The deepest `[`/`{` nesting of JSON text, strings skipped; one pass, no recursion."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def top_level_id(text: str) -> Any:
    """The `id` of a JSON object's text read without parsing its nested values (None when it has none or
    it is not a scalar): a frame too deep to parse still gets its answer under its own id."""
    depth = 0
    i = 0
    while i < len(text):
        char = text[i]
        if char == '"':
            end = i + 1
            while end < len(text) and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            key = text[i + 1:end]
            rest = text[end + 1:].lstrip()
            if depth == 1 and key == "id" and rest.startswith(":"):
                value = rest[1:].lstrip()
                if value[:1] not in ("[", "{"):
                    try:
                        return json.JSONDecoder().raw_decode(value)[0]
                    except ValueError:
                        return None
            i = end + 1
            continue
        if char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        i += 1
    return None


def _error(request_id: Any, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id if _valid_id(request_id) else None,
                        error=ErrorData(code=code, message=message))


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class FrameScreen:
    """What to do with one stdin line before the SDK reads it: None (pass it on) or the error to answer."""

    def __init__(self) -> None:
        self.initialized = False

    def screen(self, line: str) -> JSONRPCError | None:
        if nesting_depth(line) > MAX_FRAME_DEPTH:
            return _error(top_level_id(line), INVALID_PARAMS,
                          f"Invalid params: nested deeper than {MAX_FRAME_DEPTH} levels")
        try:
            frame = json.loads(line)
        except ValueError:
            return None  # the SDK refuses it and `error_reply` answers -32700
        if not isinstance(frame, dict) or not isinstance(frame.get("method"), str) or "id" not in frame:
            return None  # a notification, a response, or a frame `error_reply` answers
        if not _valid_id(frame["id"]):
            return _error(None, INVALID_REQUEST, "Invalid Request: `id` must be a string or an integer, got "
                                                 f"{'null' if frame['id'] is None else type(frame['id']).__name__}")
        method = frame["method"]
        if not self.initialized and method not in BEFORE_INITIALIZE:
            return _error(frame["id"], INVALID_REQUEST, f"Invalid Request: {method[:80]!r} before `initialize`; "
                                                        "send `initialize` first")
        if method == "initialize":
            self.initialized = True
        return None


class ScreenedLines:
    """stdin's lines for the SDK's reader, less the ones `FrameScreen` answers (sent to `replies`)."""

    def __init__(self, lines: Any, replies: Any) -> None:
        self.lines = lines
        self.replies = replies
        self.screen = FrameScreen()

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self.lines:
            reply = self.screen.screen(line)
            if reply is None:
                yield line
            else:
                await self.replies.send(reply)


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
    return value if _valid_id(value) else None


def _raw_frame(exc: ValidationError) -> tuple[bool, Any]:
    """(parsed, frame): the frame the SDK refused, re-read from the error's input."""
    for error in exc.errors():
        if error["type"] == JSON_INVALID:
            text = error.get("input")
            if isinstance(text, str | bytes) and nesting_depth(text if isinstance(text, str) else
                                                               text.decode("utf-8", "replace")) > MAX_FRAME_DEPTH:
                return True, None  # never parsed again: Python's parser recurses
            try:  # Python's parser keeps lone surrogates that pydantic's refuses
                return True, json.loads(text) if isinstance(text, str | bytes) else None
            except (ValueError, RecursionError):
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
    """The SDK's stdio transport over `ScreenedLines`, with every frame it cannot read answered by
    `error_reply`."""
    stdin_buffer, restore_stdin = _claim_fd(0, sys.stdin, "rb", _open_stdin_diversion)
    stdin = anyio.wrap_file(_UnownedTextWrapper(stdin_buffer, encoding="utf-8", errors="replace"))
    screened, screened_reads = create_context_streams[JSONRPCError](0)
    try:
        async with stdio_server(stdin=ScreenedLines(stdin, screened)) as (read_stream, write_stream):
            forward, server_reads = create_context_streams[SessionMessage | Exception](0)

            async def pump() -> None:
                async with forward:
                    async for item in read_stream:
                        if not isinstance(item, Exception):
                            await forward.send(item)
                            continue
                        try:
                            reply = error_reply(item)
                        except RecursionError:
                            reply = _error(None, INVALID_REQUEST, "Invalid Request: nested too deeply")
                        if reply is not None:
                            await write_stream.send(SessionMessage(reply))

            async def answer_screened() -> None:
                async with screened_reads:
                    async for reply in screened_reads:
                        await write_stream.send(SessionMessage(reply))

            async with anyio.create_task_group() as group:
                group.start_soon(pump)
                group.start_soon(answer_screened)
                yield server_reads, write_stream
                group.cancel_scope.cancel()
    finally:
        if restore_stdin is not None:
            restore_stdin()


async def run_stdio(server: MCPServer) -> None:
    """`MCPServer.run_stdio_async` over `guarded_stdio`."""
    lowlevel = server._lowlevel_server  # noqa: SLF001 (the SDK's own stdio runner reaches it the same way)
    async with guarded_stdio() as (read_stream, write_stream):
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

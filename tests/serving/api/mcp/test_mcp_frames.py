"""MCP conformance with raw frames: every request with an id gets a response or a JSON-RPC error
(-32700 parse error, -32600 invalid request, -32602 invalid params), over stdio and streamable HTTP."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, free_port, shared_cache_dir

pytestmark = pytest.mark.timeout(600)

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
SEARCH = {"name": "search", "arguments": {"query": "ledger"}}
# (frame as sent, the id it carries, the error code it must get)
BAD_FRAMES = [
    (json.dumps({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": ["search", {"query": "x"}]}), 11,
     INVALID_PARAMS),
    ('{"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "\\ud800"}}}',
     12, INVALID_PARAMS),
    (json.dumps({"jsonrpc": "2.0", "id": 13, "method": "tools/list", "params": 5}), 13, INVALID_PARAMS),
    ("this is not json", None, PARSE_ERROR),
    ('{"jsonrpc": "2.0", "id": 14, "method": "tools/ca', None, PARSE_ERROR),
    (json.dumps({"jsonrpc": "2.0", "id": 15}), 15, INVALID_REQUEST),
    (json.dumps({"jsonrpc": "1.0", "id": 16, "method": "tools/list"}), 16, INVALID_REQUEST),
    (json.dumps([{"jsonrpc": "2.0", "id": 17, "method": "tools/list"}]), None, INVALID_REQUEST),
]


def command(index_root: Path) -> list[str]:
    return [sys.executable, "-m", "jobs.cli", "mcp", "--index-root", str(index_root), "--no-sync",
            "--set", f"paths.cache_dir={shared_cache_dir()}"]


ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


class StdioPeer:
    """`semantica mcp` over stdio, written to and read from line by line."""

    def __init__(self, index_root: Path, stderr: Path) -> None:
        self._err = open(stderr, "w")
        self.proc = subprocess.Popen(command(index_root), cwd=REPO_ROOT, env=ENV, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._err)

    def send(self, frame: str | dict) -> None:
        text = frame if isinstance(frame, str) else json.dumps(frame)
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode("utf-8") + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout_s: float) -> dict:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
        assert ready, f"no reply within {timeout_s} s"
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(30)
        self._err.close()


def test_every_bad_stdio_frame_gets_a_json_rpc_error_and_the_session_goes_on(tmp_path):
    peer = StdioPeer(tmp_path / "index", tmp_path / "mcp-stderr.log")
    try:
        peer.send(INITIALIZE)
        assert peer.receive(180)["id"] == 0
        peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        peer.send({"jsonrpc": "2.0", "method": "notifications/initialized", "params": [1]})  # a notification: no reply
        for frame, request_id, code in BAD_FRAMES:
            peer.send(frame)
            reply = peer.receive(30)
            assert reply["jsonrpc"] == "2.0" and reply["id"] == request_id, (frame, reply)
            assert reply["error"]["code"] == code and reply["error"]["message"], (frame, reply)
        peer.send({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": SEARCH})
        answer = peer.receive(120)
        assert answer["id"] == 99 and "result" in answer  # the session survived every bad frame
    finally:
        peer.close()


def deep_call(request_id: int, depth: int) -> str:
    repos = "[" * depth + "]" * depth
    return (f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", "params": {{"name": "search", '
            f'"arguments": {{"query": "x", "repos": {repos}}}}}}}')


def test_deep_frames_odd_ids_and_early_requests_are_answered_and_the_server_lives(tmp_path):
    """A 500-level `repos` ended `semantica mcp` (Python's parser recursed in the error path); a request with
    an object, float, bool, null or list `id`, or one before `initialize`, got no answer at all."""
    peer = StdioPeer(tmp_path / "index", tmp_path / "mcp-stderr.log")
    try:
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        early = peer.receive(180)
        assert early["id"] == 1 and early["error"]["code"] in (INVALID_REQUEST, INVALID_PARAMS)
        peer.send(INITIALIZE)
        assert peer.receive(60)["id"] == 0
        peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for request_id, depth in ((21, 500), (22, 5000), (23, 300)):
            peer.send(deep_call(request_id, depth))
            reply = peer.receive(30)
            assert reply["id"] == request_id and reply["error"]["code"] == INVALID_PARAMS, reply
        for odd in ({"a": 1}, 1.5, True, None, [1]):
            peer.send({"jsonrpc": "2.0", "id": odd, "method": "tools/list"})
            reply = peer.receive(30)
            assert reply["id"] is None and reply["error"]["code"] == INVALID_REQUEST, (odd, reply)
        peer.send({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": SEARCH})
        answer = peer.receive(120)
        assert answer["id"] == 99 and "result" in answer
        assert peer.proc.poll() is None
    finally:
        peer.close()


def test_every_bad_http_frame_gets_a_json_rpc_error(tmp_path):
    import httpx

    port = free_port()
    log = open(tmp_path / "http-stderr.log", "w")
    proc = subprocess.Popen([*command(tmp_path / "index"), "--transport", "streamable-http", "--port", str(port)],
                            cwd=REPO_ROOT, env=ENV, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/mcp"
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "http-stderr.log").read_text()
                time.sleep(0.5)
        with httpx.Client(timeout=60) as client:
            init = client.post(url, content=json.dumps(INITIALIZE), headers=headers)
            assert init.status_code == 200, init.text
            session = {**headers, "mcp-session-id": init.headers["mcp-session-id"]}
            for frame, _request_id, _code in BAD_FRAMES:
                reply = client.post(url, content=frame.encode(), headers=session)
                assert 400 <= reply.status_code < 500, (frame, reply.status_code, reply.text)
                body = reply.json()
                assert body["jsonrpc"] == "2.0" and "id" in body, (frame, body)
                assert body["error"]["code"] in (PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS), (frame, body)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()

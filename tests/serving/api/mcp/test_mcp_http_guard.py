"""`semantica mcp --transport streamable-http` off loopback keeps `serve`'s rules, checked with raw HTTP:
no token, a foreign Host or Origin, or two Host headers are refused; the token and an allowed Host open a
session. Before, `--host 0.0.0.0` listed every repository to anyone, whatever Host or Origin they sent."""

from __future__ import annotations

import json
import socket
import subprocess
import time

import pytest

from tests.conftest import REPO_ROOT, free_port
from tests.serving.api.mcp.test_mcp_frames import ENV, INITIALIZE, command

pytestmark = pytest.mark.timeout(600)

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def wait_listening(port: int, proc: subprocess.Popen, log) -> None:  # noqa: ANN001
    deadline = time.monotonic() + 180
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)


def raw_post(port: int, headers: list[tuple[str, str]], body: bytes, path: str = "/mcp") -> int:
    """The status line of one POST sent byte for byte (httpx cannot send two Host headers)."""
    lines = [f"POST {path} HTTP/1.1".encode(), *(f"{k}: {v}".encode() for k, v in headers),
             f"Content-Length: {len(body)}".encode(), b"Connection: close", b"", b""]
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"\r\n".join(lines) + body)
        reply = sock.recv(4096)
    return int(reply.split(b" ", 2)[1])


def test_off_loopback_needs_the_token_an_allowed_host_and_origin(tmp_path):
    import httpx

    port = free_port()
    token_file = tmp_path / "token"
    log_path = tmp_path / "http-stderr.log"
    log = open(log_path, "w")
    proc = subprocess.Popen([*command(tmp_path / "index"), "--transport", "streamable-http", "--host", "0.0.0.0",
                             "--port", str(port), "--set", f"auth.token_file={token_file}"],
                            cwd=REPO_ROOT, env=ENV, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/mcp"
    body = json.dumps(INITIALIZE)
    try:
        wait_listening(port, proc, log_path)
        token = token_file.read_text().strip()
        assert token and (token_file.stat().st_mode & 0o777) == 0o600
        auth = {**HEADERS, "Authorization": f"Bearer {token}"}
        with httpx.Client(timeout=60) as client:
            assert client.post(url, content=body, headers=HEADERS).status_code == 401
            assert client.post(url, content=body, headers={**HEADERS, "Authorization": "Bearer wrong"}).status_code == 401
            assert client.post(url, content=body, headers={**auth, "Host": "evil.example"}).status_code == 421
            refused = client.post(url, content=body, headers={**auth, "Origin": "http://evil.example"})
            assert refused.status_code == 403
            opened = client.post(url, content=body, headers={**auth, "Origin": f"http://localhost:{port}"})
            assert opened.status_code == 200, opened.text
            assert "mcp-session-id" in opened.headers
        two_hosts = [("Host", f"127.0.0.1:{port}"), ("Host", "evil.example"), ("Authorization", f"Bearer {token}"),
                     ("Accept", HEADERS["Accept"]), ("Content-Type", "application/json")]
        assert raw_post(port, two_hosts, body.encode()) == 400
        assert "auth: bearer token created in" in log_path.read_text()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()

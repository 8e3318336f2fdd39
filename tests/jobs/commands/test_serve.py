"""`semantica serve` as a real process: it creates the token file and says where it is (not what it is), and
SIGTERM drains: requests in flight when the signal arrives are answered, new ones get 503, none is cut."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
import time

import httpx
import pytest

from tests.conftest import REPO_ROOT, SERVE_STARTUP_S, free_port
from tests.serving.ray.test_app import make_tiny_index

pytestmark = [pytest.mark.ray, pytest.mark.timeout(600)]
STARTUP_S = SERVE_STARTUP_S + 40  # the server's own limit, then time to print why it stopped
CLIENTS = 4
BIND_ATTEMPTS = 3
BIND_RACE = "Failed to bind to address"


def _start(command: list[str], env: dict[str, str]) -> tuple[subprocess.Popen, list[str], bool]:
    """The server process, its stderr lines (read on), and whether it said it serves before it exited or
    `STARTUP_S` passed."""
    proc = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    ready, ended = threading.Event(), threading.Event()

    def read() -> None:
        for line in proc.stderr:
            lines.append(line)
            if "semantica serving on" in line:
                ready.set()
        ended.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + STARTUP_S
    while not ready.is_set() and not ended.is_set() and proc.poll() is None and time.monotonic() < deadline:
        ready.wait(0.5)
    if not ready.is_set():
        if proc.poll() is None:
            proc.kill()
        proc.wait(60)
        reader.join(10)  # the exited server's last lines (the bind error) are read before the caller looks
    return proc, lines, ready.is_set()


def test_serve_prints_the_token_location_and_drains_on_sigterm(tmp_path):
    config = make_tiny_index(tmp_path)
    token_file = tmp_path / "secrets" / "token"
    settings = [f"paths.index_root={config.paths.index_root}", f"paths.cache_dir={config.paths.cache_dir}",
                f"serve.feedback_dir={config.serve.feedback_dir}", "auth.mode=required",
                f"auth.token_file={token_file}", "admission.deadline_s=120", "admission.drain_timeout_s=120",
                "query.query_cache_items=0", f"ray.startup_timeout_s={SERVE_STARTUP_S}"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    for attempt in range(1, BIND_ATTEMPTS + 1):
        port = free_port()
        command = [sys.executable, "-m", "jobs.cli", "serve", "--port", str(port)]
        for item in settings:
            command += ["--set", item]
        proc, lines, ready = _start(command, env)
        if ready or BIND_RACE not in "".join(lines) or attempt == BIND_ATTEMPTS:
            break  # another process may take the free port between the probe and the bind (a busy machine)
    try:
        assert ready, "".join(lines[-30:])
        token = token_file.read_text().strip()
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        log = "".join(lines)
        assert str(token_file) in log and token not in log  # where the token is, never the token
        base = f"http://127.0.0.1:{port}"
        assert httpx.post(f"{base}/v1/search", json={"query": "cart"}, timeout=60).status_code == 401
        headers = {"Authorization": f"Bearer {token}"}
        outcomes: list[tuple[float, float, object]] = []  # (sent, answered, status or error)
        stop = threading.Event()

        def client(n: int) -> None:
            with httpx.Client(base_url=base, headers=headers, timeout=180) as http:
                i = 0
                while not stop.is_set():
                    i += 1
                    sent = time.monotonic()
                    try:
                        r = http.post("/v1/search", json={"query": f"total price of cart items {n} {i}", "k": 5})
                        outcomes.append((sent, time.monotonic(), r.status_code))
                    except httpx.HTTPError as exc:
                        outcomes.append((sent, time.monotonic(), exc))
                        if isinstance(exc, httpx.ConnectError):
                            return  # the server no longer listens

        threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
        for t in threads:
            t.start()
        while len([o for o in outcomes if o[2] == 200]) < CLIENTS:  # traffic is flowing
            time.sleep(0.05)
        sigterm_at = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(STARTUP_S) == 0, "".join(lines[-30:])
        stop.set()
        for t in threads:
            t.join(60)
        in_flight = [o for o in outcomes if o[0] < sigterm_at < o[1]]
        assert in_flight, "no request was in flight at SIGTERM"
        assert all(o[2] == 200 for o in in_flight), f"in-flight requests not answered: {in_flight}"
        after = [o[2] for o in outcomes if o[0] > sigterm_at]
        # sent after SIGTERM: answered (before the drain began), refused with 503, or not accepted at all
        assert all(s in (200, 503) or isinstance(s, httpx.TransportError) for s in after), after
        assert "'drained': True" in "".join(lines), "".join(lines[-30:])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(60)

"""Where the warm query daemon listens and how a client talks to it (both sides import this).

One daemon per (configuration, working directory): its socket is named by a fingerprint of both, so a
query with other overrides or another index root never reaches a daemon that would answer differently.
The socket lives in a 0700 directory and is itself 0600: only the user who started it can ask.
Messages are one JSON object per line each way (`{"op": ...}` -> `{"ok": true, ...}`).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from semantica.config import Config, config_to_dict

DAEMON_DIR = "daemon"
SOCKET_PATH_MAX = 100  # AF_UNIX paths are limited to 107 bytes on Linux
FINGERPRINT_CHARS = 16
RECV_CHUNK = 1 << 16
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
CONNECT_PAUSE_S = 0.01  # between connect attempts while the daemon's listen queue is full


class DaemonProtocolError(RuntimeError):
    """The daemon closed the connection or sent something that is not one JSON line."""


def fingerprint(config: Config, cwd: str | None = None) -> str:
    """Hash of every setting that changes an answer (the `daemon` section itself does not) and the working
    directory (relative paths in the config resolve against it)."""
    values = {k: v for k, v in config_to_dict(config).items() if k != DAEMON_DIR}
    text = json.dumps({"config": values, "cwd": cwd or os.getcwd()}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:FINGERPRINT_CHARS]


def run_dir(config: Config) -> Path:
    """`daemon.run_dir`, else `<paths.cache_dir>/daemon`; a per-user temp directory when that path is too
    long for a unix socket. Created 0700."""
    chosen = Path(config.daemon.run_dir or Path(config.paths.cache_dir) / DAEMON_DIR).expanduser().absolute()
    if len(str(chosen)) + FINGERPRINT_CHARS + len(".sock") + 1 > SOCKET_PATH_MAX:
        chosen = Path(tempfile.gettempdir()) / f"semantica-{os.getuid()}-{DAEMON_DIR}"
    chosen.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    os.chmod(chosen, PRIVATE_DIR_MODE)
    return chosen


@dataclass(frozen=True)
class DaemonPaths:
    """The files of one daemon: socket, start lock, log and the configuration it was started with."""

    socket: Path
    lock: Path
    log: Path
    config: Path

    @classmethod
    def of(cls, config: Config, cwd: str | None = None) -> DaemonPaths:
        directory = run_dir(config)
        name = fingerprint(config, cwd)
        return cls(directory / f"{name}.sock", directory / f"{name}.lock", directory / f"{name}.log",
                   directory / f"{name}.json")


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.sendall(json.dumps(message, default=str, ensure_ascii=False).encode() + b"\n")


def receive(sock: socket.socket) -> dict[str, Any]:
    """One JSON line; DaemonProtocolError when the peer closes first or sends garbage."""
    buffer = bytearray()
    while not buffer.endswith(b"\n"):
        chunk = sock.recv(RECV_CHUNK)
        if not chunk:
            raise DaemonProtocolError("the daemon closed the connection before answering")
        buffer += chunk
    try:
        message = json.loads(buffer)
    except ValueError as exc:
        raise DaemonProtocolError(f"the daemon sent something that is not JSON: {exc}") from None
    if not isinstance(message, dict):
        raise DaemonProtocolError("the daemon's answer is not a JSON object")
    return message


def connect(path: Path, timeout_s: float, retry_s: float = 0.0) -> socket.socket:
    """A connected socket (OSError when nothing listens there). A unix socket with a timeout connects
    without blocking, so a full listen queue fails at once with EAGAIN: retry that for up to `retry_s`."""
    deadline = time.monotonic() + retry_s
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout_s)
        try:
            sock.connect(str(path))
            return sock
        except BlockingIOError:
            sock.close()
            if time.monotonic() >= deadline:
                raise
            time.sleep(CONNECT_PAUSE_S)
        except OSError:
            sock.close()
            raise


def ask(path: Path, message: dict[str, Any], timeout_s: float, retry_s: float = 0.0) -> dict[str, Any]:
    """Send one message and wait for its answer (`retry_s`: how long to retry a full listen queue)."""
    with connect(path, timeout_s, retry_s) as sock:
        send(sock, message)
        return receive(sock)

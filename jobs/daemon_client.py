"""The CLI side of the warm query daemon: find it, start it detached on first use, ask it.

Imports nothing heavy (no torch, no JVM, no pyarrow): a warm `semantica query` is this module, one
socket round trip and printing. Anything that goes wrong with the daemon itself (it cannot start,
it dies, it answers garbage) returns None and the caller answers in-process: the daemon is a cache of
loaded state, never the only way to get an answer.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from semantica.api import HitView, SearchResponse
from semantica.config import Config, config_to_dict
from semantica.daemon_protocol import PRIVATE_FILE_MODE, DaemonPaths, DaemonProtocolError, ask, fingerprint, run_dir

log = logging.getLogger(__name__)
POLL_S = 0.05
STATUS_TIMEOUT_S = 5.0
PACKAGE_ROOT = Path(__file__).resolve().parent.parent  # where `jobs` is importable from


class DaemonAnswerError(RuntimeError):
    """The daemon answered, and the answer is an error about the request (printed as one line)."""


def response_from_dict(values: dict[str, Any]) -> SearchResponse:
    return SearchResponse(**{**values, "hits": [HitView(**hit) for hit in values["hits"]]})


def search_via_daemon(config: Config, request_fields: dict[str, Any], branch: str | None) -> dict[str, Any] | None:
    """The response dict from the (started if need be) daemon; None when no daemon can answer.
    DaemonAnswerError when the daemon rejects the request (bad k, unknown repository, ...)."""
    try:
        paths = DaemonPaths.of(config)
        if not ensure_running(config, paths):
            return None
    except OSError as exc:  # the run directory cannot be made, the lock cannot be taken, ...
        log.warning("no query daemon (%s); answering in this process", exc)
        return None
    try:
        answer = ask(paths.socket, {"op": "search", "request": request_fields, "branch": branch},
                     config.daemon.request_timeout_s, config.daemon.connect_retry_s)
    except (OSError, DaemonProtocolError) as exc:
        log.warning("the query daemon did not answer (%s); answering in this process", exc)
        return None
    if answer.get("ok"):
        return answer["response"]
    if answer.get("unavailable"):
        log.warning("%s; answering in this process (log: %s)", answer.get("message"), paths.log)
        return None
    raise DaemonAnswerError(answer.get("message") or answer.get("error") or "the daemon refused the request")


def ensure_running(config: Config, paths: DaemonPaths) -> bool:
    """True when a daemon listens on `paths.socket`, starting one (under a file lock, so concurrent
    first queries start exactly one) when none does."""
    if _listening(paths.socket):
        return True
    with open(paths.lock, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if _listening(paths.socket):  # another client started it while we waited for the lock
                return True
            process = _spawn(config, paths)
            deadline = time.monotonic() + config.daemon.start_timeout_s
            while time.monotonic() < deadline:
                if _listening(paths.socket):
                    return True
                if process.poll() is not None:
                    log.warning("the query daemon exited at start (code %s, log: %s)", process.returncode, paths.log)
                    return False
                time.sleep(POLL_S)
            log.warning("the query daemon did not listen within daemon.start_timeout_s=%s s (log: %s)",
                        config.daemon.start_timeout_s, paths.log)
            return False
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _listening(path: Path) -> bool:
    import socket

    if not path.exists():
        return False
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        probe.close()


def _spawn(config: Config, paths: DaemonPaths) -> subprocess.Popen:
    """`semantica daemon run` detached from this terminal (own session; output to its log, 0600)."""
    fd = os.open(paths.config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE_MODE)
    with os.fdopen(fd, "w") as out:
        json.dump(config_to_dict(config), out)
    log_fd = os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE_MODE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(PACKAGE_ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "jobs.cli", "daemon", "run", "--from-json", str(paths.config)],
            stdin=subprocess.DEVNULL, stdout=log_fd, stderr=log_fd, env=env, start_new_session=True, close_fds=True)
    finally:
        os.close(log_fd)


def daemon_statuses(config: Config) -> list[dict[str, Any]]:
    """Every daemon listening in the run directory (this configuration's flagged `current`)."""
    directory = run_dir(config)
    mine = fingerprint(config)
    out = []
    for sock in sorted(directory.glob("*.sock")):
        try:
            answer = ask(sock, {"op": "status"}, STATUS_TIMEOUT_S)
        except (OSError, DaemonProtocolError):
            continue  # a stale socket of a daemon that died
        status = answer.get("status") or {}
        out.append({**status, "current": sock.stem == mine})
    return out


def stop_daemon(socket_path: Path, wait_s: float = STATUS_TIMEOUT_S) -> bool:
    """Ask one daemon to stop and wait until its socket is gone; False when none was listening."""
    try:
        ask(socket_path, {"op": "stop"}, STATUS_TIMEOUT_S)
    except (OSError, DaemonProtocolError):
        return False
    deadline = time.monotonic() + wait_s
    while socket_path.exists() and time.monotonic() < deadline:
        time.sleep(POLL_S)
    return True

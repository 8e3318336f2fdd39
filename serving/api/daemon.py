"""The warm query daemon: one `SearchPipeline` kept loaded behind a unix socket, so `semantica query`
pays a socket round trip instead of loading the encoder, the JVM and the indexes in every process.

Why not Ray Serve: the CLI needs one small local process, and Ray must never start where the JVM runs
(semantica/runtime/ray_runtime.py). Why a unix socket: file permissions (0600 in a 0700 directory) are the
access control, no port is opened. New snapshots are picked up as the pipeline picks them up
(`SnapshotSet` re-resolves CURRENT on every request). The daemon exits after `daemon.idle_timeout_s`
without a request, on `{"op": "stop"}`, on SIGTERM, or when its socket file is removed or replaced.
"""

from __future__ import annotations

import logging
import os
import resource
import signal
import socketserver
import threading
import time
from pathlib import Path
from typing import Any

from semantica.api import SearchRequest
from semantica.config import Config
from semantica.daemon_protocol import PRIVATE_FILE_MODE, DaemonProtocolError, receive, send
from semantica.errors import ErrorKind, local_kind_of, public_message
from serving.api.request import RequestBuilder

log = logging.getLogger(__name__)
IDLE_CHECKS_PER_TIMEOUT = 4
IDLE_CHECK_MAX_S = 5.0


class _Handler(socketserver.StreamRequestHandler):
    server: _UnixServer

    def handle(self) -> None:
        daemon = self.server.daemon
        try:
            message = receive(self.request)
        except (DaemonProtocolError, OSError):
            return
        with daemon.activity():
            answer = daemon.answer(message)
        try:
            send(self.request, answer)
        except OSError:  # the client gave up (Ctrl-C): nothing to tell it
            pass


class _UnixServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    daemon: QueryDaemon


class QueryDaemon:
    """Binds the socket first (clients may connect and queue while the pipeline loads), then loads the
    pipeline and answers `search`, `status` and `stop` messages until idle for `idle_timeout_s`."""

    def __init__(self, config: Config, socket_path: Path, fingerprint: str = "") -> None:
        self.config = config
        self.socket_path = socket_path
        self.fingerprint = fingerprint
        self.started = time.time()
        self.requests = 0
        self._in_flight = 0
        self._last_activity = time.monotonic()
        self._lock = threading.Lock()
        self._pipeline: Any = None
        self._load_error = ""
        self._ready = threading.Event()
        self._server = self._bind()

    def _bind(self) -> _UnixServer:
        if self.socket_path.exists() or self.socket_path.is_symlink():
            self.socket_path.unlink()  # a stale socket: the client that started us holds the start lock
        old_umask = os.umask(0o177)  # the socket is created 0600, never briefly wider
        try:
            server = _UnixServer(str(self.socket_path), _Handler, bind_and_activate=False)
            server.request_queue_size = self.config.daemon.listen_backlog  # listen(2)'s backlog
            try:
                server.server_bind()
                server.server_activate()
            except BaseException:
                server.server_close()
                raise
        finally:
            os.umask(old_umask)
        os.chmod(self.socket_path, PRIVATE_FILE_MODE)
        server.daemon = self
        self._inode = self.socket_path.stat().st_ino
        return server

    def load(self) -> None:
        """Build the pipeline and load every default repository's indexes in parallel; a failure is kept
        (searches answer `unavailable`, clients fall back to in-process) and stops the daemon."""
        try:
            from serving.pipeline import SearchPipeline

            pipeline = SearchPipeline(self.config)
            pipeline.prefetch(pipeline.snapshots.default_repos()).wait()
            self._pipeline = pipeline
            log.info("daemon %s ready on %s", self.fingerprint, self.socket_path)
        except Exception as exc:
            log.error("daemon %s cannot load the pipeline", self.fingerprint, exc_info=True)
            self._load_error = public_message(exc)
            self.stop()
        finally:
            self._touch(0)  # the idle clock starts when loading ends
            self._ready.set()

    def serve(self) -> None:
        """Answer (status at once; searches once loaded) until stopped or idle; removes its socket at the end."""
        threading.Thread(target=self.load, name="daemon-load", daemon=True).start()
        threading.Thread(target=self._watch_idle, name="daemon-idle", daemon=True).start()
        try:
            self._server.serve_forever(poll_interval=0.2)
        finally:
            self._server.server_close()
            self._remove_socket()

    def stop(self) -> None:
        threading.Thread(target=self._server.shutdown, daemon=True).start()

    def activity(self) -> _Activity:
        return _Activity(self)

    def answer(self, message: dict[str, Any]) -> dict[str, Any]:
        op = message.get("op")
        try:
            if op == "status":
                return {"ok": True, "status": self.status()}
            if op == "stop":
                self.stop()
                return {"ok": True, "stopping": True}
            if op == "search":
                self._ready.wait()
                if self._pipeline is None:
                    return {"ok": False, "unavailable": True, "error": "DaemonUnavailable",
                            "message": f"the daemon could not load: {self._load_error}"}
                with self._lock:
                    self.requests += 1
                request = RequestBuilder(self._pipeline.snapshots).build(
                    SearchRequest, dict(message.get("request") or {}), message.get("branch"))
                response = self._pipeline.search(request)
                return {"ok": True, "response": response.to_dict()}
            return {"ok": False, "error": "ValueError", "kind": ErrorKind.INVALID.slug,
                    "message": f"unknown op {op!r}; known: search, status, stop"}
        except Exception as exc:  # the client prints it as one line; the daemon keeps serving
            log.warning("daemon request failed", exc_info=True)
            kind = local_kind_of(exc) or ErrorKind.INTERNAL
            return {"ok": False, "error": type(exc).__name__, "kind": kind.slug, "message": str(exc) or public_message(exc)}

    def status(self) -> dict[str, Any]:
        idle = time.monotonic() - self._last_activity
        return {"pid": os.getpid(), "fingerprint": self.fingerprint, "socket": str(self.socket_path),
                "ready": self._pipeline is not None, "started": self.started, "uptime_s": round(time.time() - self.started, 1),
                "requests": self.requests, "idle_s": round(idle, 1), "idle_timeout_s": self.config.daemon.idle_timeout_s,
                "index_root": str(Path(self.config.paths.index_root).absolute()),
                "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)}

    def _touch(self, delta: int) -> None:
        with self._lock:
            self._in_flight += delta
            self._last_activity = time.monotonic()

    def _watch_idle(self) -> None:
        timeout = self.config.daemon.idle_timeout_s
        interval = min(IDLE_CHECK_MAX_S, max(0.05, timeout / IDLE_CHECKS_PER_TIMEOUT))
        self._ready.wait()
        while True:
            time.sleep(interval)
            with self._lock:
                idle = self._in_flight == 0 and time.monotonic() - self._last_activity > timeout
            if idle or not self._owns_socket():
                log.info("daemon %s stopping: %s", self.fingerprint, "idle" if idle else "socket removed")
                self._server.shutdown()
                return

    def _owns_socket(self) -> bool:
        try:
            return self.socket_path.stat().st_ino == self._inode
        except FileNotFoundError:
            return False

    def _remove_socket(self) -> None:
        if self._owns_socket():
            self.socket_path.unlink(missing_ok=True)


class _Activity:
    """Counts a request as in flight (the idle clock does not run out under a long query)."""

    def __init__(self, daemon: QueryDaemon) -> None:
        self.daemon = daemon

    def __enter__(self) -> None:
        self.daemon._touch(+1)

    def __exit__(self, *_: object) -> None:
        self.daemon._touch(-1)


def run_daemon(config: Config, socket_path: Path, fingerprint: str = "") -> None:
    """Serve in the foreground until idle or stopped (SIGTERM/SIGINT stop it cleanly)."""
    daemon = QueryDaemon(config, socket_path, fingerprint)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: daemon.stop())
    daemon.serve()

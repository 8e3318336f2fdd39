"""Feedback records (`POST /v1/feedback`): append-only strict-JSON lines, one file per UTC day."""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
import uuid
from pathlib import Path
from typing import Any

from semantica.errors import ErrorKind

FEEDBACK_FILE = "feedback-{date}.jsonl"
FILE_MODE = 0o600  # queries and comments are the users': readable by the server's account only
DIRECTORY_MODE = 0o700


class FeedbackStoreUnavailable(RuntimeError):
    """The feedback directory cannot be written (a full disk, a read-only mount): 503, try again later."""

    error_kind = ErrorKind.UNAVAILABLE


class FeedbackLog:
    """Append-only JSONL, one file per UTC day, each record fsync'ed before the request returns."""

    def __init__(self, directory: str) -> None:
        self.directory = Path(directory)
        self._lock = threading.Lock()

    def append(self, record: dict[str, Any]) -> Path:
        try:
            return self._append(record)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise FeedbackStoreUnavailable(f"feedback cannot be stored now ({reason}); nothing was recorded, "
                                           "try again later") from None

    def _append(self, record: dict[str, Any]) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True, mode=DIRECTORY_MODE)
        now = dt.datetime.now(dt.UTC)
        path = self.directory / FEEDBACK_FILE.format(date=now.strftime("%Y%m%d"))
        line = (json.dumps({"id": uuid.uuid4().hex, "ts": now.isoformat(timespec="milliseconds"), **record},
                           ensure_ascii=False, default=str, allow_nan=False) + "\n").encode()  # strict JSON
        with self._lock:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
            try:
                os.fchmod(fd, FILE_MODE)  # a file an older version created world-readable is narrowed too
                _write_whole(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
        return path


def _write_whole(fd: int, line: bytes) -> None:
    """One write on an O_APPEND fd (replicas never interleave records); a short write (a disk that fills
    mid-record) is finished or, when the rest fails, cut back so no torn line is left."""
    start = os.fstat(fd).st_size
    written = os.write(fd, line)
    try:
        while written < len(line):
            written += os.write(fd, line[written:])
    except OSError:
        os.ftruncate(fd, start)
        raise

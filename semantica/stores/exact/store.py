"""One exact-search shard: an SQLite file holding every file's content (raw, or zlib at `exact.compress_level`
above 0) and an FTS5 `trigram` table of it without positions (`detail=none`: about 0.7x the text, against 3.7x with positions).

A query's required literals become an AND of trigrams (`pattern.fts_query`), so the index returns a superset
of the files that can match; RE2 then reads only those. The index folds case; the verifier does not, so one
index serves case-sensitive and case-insensitive patterns.
"""

from __future__ import annotations

import sqlite3
import threading
import zlib
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

SCHEMA = (
    "CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT NOT NULL, blob_sha TEXT NOT NULL, data BLOB NOT NULL)",
    "CREATE VIRTUAL TABLE grams USING fts5(body, content='', tokenize='trigram', detail='none')",
)
ZLIB_MARK = b"\x00"  # a compressed row starts with it (UTF-8 text the discovery keeps never holds a NUL)
# the most candidate files read per statement (batches double up to it): a statement per file was most of a
# full scan's time
READ_BATCH_FILES = 32
# a read connection maps its shard file (SQLite's mmap I/O) instead of a read() per page: contents and postings
# come straight from the page cache (12% of a literal's time on sympy); a shard larger than this is read past it
MMAP_BYTES = 1 << 30
EXACT_FORMAT = "1"  # bump when the schema or what a row holds changes (it is part of every shard's key)


@dataclass(frozen=True)
class StoredFile:
    """One file of a shard: its repository-relative path, blob sha and UTF-8 content."""

    path: str
    blob_sha: str
    text: str


def write_shard(path: Path, files: Iterable[StoredFile], compress_level: int) -> int:
    """Write one shard file at `path` (built beside it, then renamed); returns the number of files."""
    path.parent.mkdir(parents=True, exist_ok=True)
    building = path.with_name(path.name + ".building")
    building.unlink(missing_ok=True)
    connection = sqlite3.connect(building)
    count = 0
    try:
        connection.execute("PRAGMA journal_mode=OFF")
        connection.execute("PRAGMA synchronous=OFF")
        for statement in SCHEMA:
            connection.execute(statement)
        for row, file in enumerate(files):
            data = file.text.encode("utf-8", "surrogatepass")
            connection.execute("INSERT INTO files(id, path, blob_sha, data) VALUES (?, ?, ?, ?)",
                               (row, file.path, file.blob_sha,
                                ZLIB_MARK + zlib.compress(data, compress_level) if compress_level > 0 else data))
            connection.execute("INSERT INTO grams(rowid, body) VALUES (?, ?)", (row, file.text))
            count += 1
        connection.execute("INSERT INTO grams(grams) VALUES ('optimize')")
        connection.commit()
    finally:
        connection.close()
    building.replace(path)
    return count


class ExactShard:
    """A published shard, read-only. One connection, used under a lock (a server's threads share it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._connection = sqlite3.connect(f"{path.as_uri()}?mode=ro&immutable=1", uri=True, check_same_thread=False)
        self._connection.execute(f"PRAGMA mmap_size={MMAP_BYTES}")

    def candidates(self, query: str | None) -> list[tuple[int, str]]:
        """(row, path) of every file that may match `query` (an FTS5 expression); every file when None."""
        with self._lock:
            if query is None:
                return list(self._connection.execute("SELECT id, path FROM files"))
            return list(self._connection.execute(
                "SELECT f.id, f.path FROM grams JOIN files f ON f.id = grams.rowid WHERE grams MATCH ?", (query,)))

    def content(self, row: int) -> bytes:
        """The UTF-8 bytes of one row."""
        return self.contents([row])[row]

    def contents(self, rows: list[int]) -> dict[int, bytes]:
        """The UTF-8 bytes of several rows, read in one statement (a statement per file was a scan's main cost)."""
        with self._lock:
            found = dict(self._connection.execute(
                f"SELECT id, data FROM files WHERE id IN ({','.join('?' * len(rows))})", rows))
        missing = [r for r in rows if r not in found]
        if missing:
            raise LookupError(f"no row {missing[0]} in exact shard {self.path.name}")
        return {r: d if d[:1] != ZLIB_MARK else zlib.decompress(d[1:]) for r, d in found.items()}

    def files(self) -> int:
        with self._lock:
            return int(self._connection.execute("SELECT count(*) FROM files").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._connection.close()


def read_in_order(shards: list[ExactShard], found: list[tuple[str, int, int]],
                  batch_files: int = READ_BATCH_FILES) -> Iterator[tuple[str, int, bytes]]:
    """(path, shard number, content) for each (path, shard number, row) of `found`, in its order. Each shard's
    rows are read ahead of their turn in batches that double from one file up to `batch_files`, so a caller that
    stops early has read at most as many files again as it used (a shard's first batch is its first file)."""
    upcoming: dict[int, deque[int]] = {}
    for _, number, row in found:
        upcoming.setdefault(number, deque()).append(row)
    ready: dict[int, dict[int, bytes]] = {number: {} for number in upcoming}
    size = dict.fromkeys(upcoming, 1)
    for path, number, row in found:
        held = ready[number]
        if row not in held:
            queue = upcoming[number]
            held.update(shards[number].contents([queue.popleft() for _ in range(min(size[number], len(queue)))]))
            size[number] = min(2 * size[number], batch_files)
        yield path, number, held.pop(row)

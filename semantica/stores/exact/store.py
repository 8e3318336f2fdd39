"""One exact-search shard: an SQLite file holding every file's content cut into line-aligned segments (raw, or
zlib at `exact.compress_level` above 0) and an FTS5 `trigram` table of the segments without positions
(`detail=none`: about 0.7x the text, against 3.7x with positions).

A query's required literals become an AND of trigrams (`pattern.fts_query`), so the index returns a superset
of the segments that can match; RE2 then reads only those. A segment is a run of whole lines of about
`SEGMENT_CHARS`, stored with its first line's number: a match never spans lines, so it lies inside one segment,
and a candidate costs a few KiB of reading instead of its whole file (without positions the postings cannot rule
out a file that holds every trigram but not the string; a small document leaves less room for that). The index
folds case; the verifier does not, so one index serves case-sensitive and case-insensitive patterns.
"""

from __future__ import annotations

import sqlite3
import threading
import zlib
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

# a file's place (its rows), each segment's place (path, first line) and each segment's bytes apart: listing every
# file or every candidate segment reads a few small pages, not a page of content per row
SCHEMA = (
    "CREATE TABLE files(path TEXT PRIMARY KEY, blob_sha TEXT NOT NULL, first_row INTEGER NOT NULL,"
    " last_row INTEGER NOT NULL) WITHOUT ROWID",
    "CREATE TABLE segments(id INTEGER PRIMARY KEY, path TEXT NOT NULL, line INTEGER NOT NULL)",
    "CREATE TABLE contents(id INTEGER PRIMARY KEY, data BLOB NOT NULL)",
    "CREATE VIRTUAL TABLE grams USING fts5(body, content='', tokenize='trigram', detail='none')",
)
ZLIB_MARK = b"\x00"  # a compressed row starts with it (UTF-8 text the discovery keeps never holds a NUL)
# a segment ends at the first line break after this many characters: every segment of a file but its last is
# SEGMENT_CHARS plus the rest of its last line
SEGMENT_CHARS = 8192
# the most segments read per statement (batches double up to it; about 512 KiB): a statement per row was most of
# a full scan's time
READ_BATCH_ROWS = 128
# a read connection maps its shard file (SQLite's mmap I/O) instead of a read() per page: contents and postings
# come straight from the page cache (12% of a literal's time on sympy); a shard larger than this is read past it
MMAP_BYTES = 1 << 30
EXACT_FORMAT = f"2-{SEGMENT_CHARS}"  # bump when the schema or what a row holds changes (part of every shard's key)


@dataclass(frozen=True)
class StoredFile:
    """One file of a shard: its repository-relative path, blob sha and UTF-8 content."""

    path: str
    blob_sha: str
    text: str


# (path, first line, shard number, first row, last row): adjacent segments of one file that may match, in a
# shard's consecutive rows; sorted together across shards, runs come in (path, line) order
Run = tuple[str, int, int, int, int]


def segments(text: str, chars: int = SEGMENT_CHARS) -> Iterator[tuple[int, str]]:
    """(first line number, text) of each line-aligned segment of `text`, in order; an empty text is one empty
    segment (so every file has a row)."""
    start, line, size = 0, 1, len(text)
    while True:
        cut = text.find("\n", start + chars - 1) if start + chars < size else -1
        end = size if cut < 0 else cut + 1
        piece = text[start:end]
        yield line, piece
        if end >= size:
            return
        line += piece.count("\n")
        start = end


def write_shard(path: Path, files: Iterable[StoredFile], compress_level: int) -> int:
    """Write one shard file at `path` (built beside it, then renamed); returns the number of files."""
    path.parent.mkdir(parents=True, exist_ok=True)
    building = path.with_name(path.name + ".building")
    building.unlink(missing_ok=True)
    connection = sqlite3.connect(building)
    count, row = 0, 0
    try:
        connection.execute("PRAGMA journal_mode=OFF")
        connection.execute("PRAGMA synchronous=OFF")
        for statement in SCHEMA:
            connection.execute(statement)
        for file in files:
            first = row
            for line, piece in segments(file.text):
                data = piece.encode("utf-8", "surrogatepass")
                connection.execute("INSERT INTO segments(id, path, line) VALUES (?, ?, ?)", (row, file.path, line))
                connection.execute("INSERT INTO contents(id, data) VALUES (?, ?)",
                                   (row, ZLIB_MARK + zlib.compress(data, compress_level) if compress_level > 0 else data))
                connection.execute("INSERT INTO grams(rowid, body) VALUES (?, ?)", (row, piece))
                row += 1
            connection.execute("INSERT INTO files(path, blob_sha, first_row, last_row) VALUES (?, ?, ?, ?)",
                               (file.path, file.blob_sha, first, row - 1))
            count += 1
        connection.execute("INSERT INTO grams(grams) VALUES ('optimize')")
        connection.commit()
    finally:
        connection.close()
    building.replace(path)
    return count


@dataclass(frozen=True)
class ShardSql:
    """What reads one shard layout: every file as runs, the candidate segments (id, path, first line) of an FTS5
    query in row order, a file's first and last row, and the table holding the bytes."""

    every_file: str
    candidates: str
    place: str
    data_table: str


SEGMENTED = ShardSql("SELECT path, 1, ?, first_row, last_row FROM files",
                     "SELECT s.id, s.path, s.line FROM grams JOIN segments s ON s.id = grams.rowid WHERE grams MATCH ?"
                     " ORDER BY grams.rowid",
                     "SELECT first_row, last_row FROM files WHERE path = ?", "contents")
# format 1, one row per whole file: a snapshot published before segments still answers until a build rewrites it
WHOLE_FILES = ShardSql("SELECT path, 1, ?, id, id FROM files",
                       "SELECT f.id, f.path, 1 FROM grams JOIN files f ON f.id = grams.rowid WHERE grams MATCH ?"
                       " ORDER BY grams.rowid",
                       "SELECT id, id FROM files WHERE path = ?", "files")


class ExactShard:
    """A published shard, read-only. One connection, used under a lock (a server's threads share it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        # a URI needs an absolute path: the default index root (.semantica/index) is relative to the working directory
        self._connection = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro&immutable=1", uri=True,
                                           check_same_thread=False)
        self._connection.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        segmented = self._connection.execute("SELECT 1 FROM sqlite_master WHERE name = 'segments'").fetchone()
        self._sql = SEGMENTED if segmented else WHOLE_FILES

    def candidates(self, query: str | None, number: int = 0) -> list[Run]:
        """The runs (`Run`, this shard being `number`) of segments that may match `query` (an FTS5 expression);
        every file whole when None."""
        with self._lock:
            if query is None:
                return self._connection.execute(self._sql.every_file, (number,)).fetchall()
            rows = self._connection.execute(self._sql.candidates, (query,)).fetchall()
        runs: list[Run] = []
        last_row, last_path = -2, None
        for row, path, line in rows:
            if row == last_row + 1 and path == last_path:
                runs[-1] = runs[-1][:4] + (row,)
            else:
                runs.append((path, line, number, row, row))
                last_path = path
            last_row = row
        return runs

    def contents(self, runs: list[Run]) -> list[bytes]:
        """The UTF-8 bytes of each run (its segments joined), read in one statement: a statement per row was a
        scan's main cost."""
        rows = [row for run in runs for row in range(run[3], run[4] + 1)]
        with self._lock:
            found = self._connection.execute(f"SELECT data FROM {self._sql.data_table} WHERE id IN "
                                             f"({','.join('?' * len(rows))}) ORDER BY id", rows).fetchall()
        if len(found) != len(rows):
            raise LookupError(f"exact shard {self.path.name} lacks rows of {runs[0][0]!r} .. {runs[-1][0]!r}")
        out, at = [], 0
        for run in runs:
            count = run[4] - run[3] + 1
            parts = found[at:at + count]
            at += count
            out.append(_inflate(parts[0][0]) if count == 1 else b"".join(_inflate(d) for (d,) in parts))
        return out

    def file(self, path: str) -> bytes:
        """The whole content of one file (its segments joined); LookupError when the shard does not hold it."""
        with self._lock:
            place = self._connection.execute(self._sql.place, (path,)).fetchone()
            if place is None:
                raise LookupError(f"no file {path!r} in exact shard {self.path.name}")
            parts = self._connection.execute(
                f"SELECT data FROM {self._sql.data_table} WHERE id BETWEEN ? AND ? ORDER BY id", place).fetchall()
        return b"".join(_inflate(d) for (d,) in parts)

    def texts(self) -> Iterator[tuple[str, bytes]]:
        """Every file's path and whole content, in path order."""
        with self._lock:
            paths = [p for (p,) in self._connection.execute("SELECT path FROM files")]
        for path in paths:
            yield path, self.file(path)

    def files(self) -> int:
        with self._lock:
            return int(self._connection.execute("SELECT count(*) FROM files").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._connection.close()


def _inflate(data: bytes) -> bytes:
    return data if data[:1] != ZLIB_MARK else zlib.decompress(data[1:])


def read_in_order(shards: list[ExactShard], runs: list[Run],
                  batch_rows: int = READ_BATCH_ROWS) -> Iterator[tuple[str, int, int, bytes]]:
    """(path, first line, shard number, content) for each run of `runs` in its order, its segments joined: one
    search a run, so a scan of every file costs one search a file. Each shard's runs are read ahead of their turn
    in batches of rows that double from one run up to `batch_rows`, so a caller that stops early has read at most
    as many rows again as it used (a shard's first batch is its first run)."""
    upcoming: dict[int, deque[Run]] = {}
    for run in runs:
        upcoming.setdefault(run[2], deque()).append(run)
    ready: dict[int, deque[bytes]] = {number: deque() for number in upcoming}
    size = dict.fromkeys(upcoming, 1)
    for path, line, number, _first, _last in runs:
        held = ready[number]
        if not held:  # runs of a shard are read, and come back, in the order they are used
            queue, batch, rows = upcoming[number], [], 0
            while queue and (not batch or rows + queue[0][4] - queue[0][3] < size[number]):
                run = queue.popleft()
                batch.append(run)
                rows += run[4] - run[3] + 1
            held.extend(shards[number].contents(batch))
            size[number] = min(2 * size[number], batch_rows)
        yield path, line, number, held.popleft()

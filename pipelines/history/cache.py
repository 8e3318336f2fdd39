"""Commit records cached by sha: shared by every snapshot and branch of every repository (a sha names one commit),
so a later snapshot only reads the commits it has not seen, the way the parse cache works for blobs."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

from pipelines.history.gitread import source_pathspecs
from semantica.stores.history.records import CommitRecord

CACHE_VERSION = "h2"
"""Bumped when what a record holds (or how it is read) changes: older rows are then ignored."""


def sources_key() -> str:
    """Names the files a record covers (the pathspecs of every language with spans): a language added to the table
    reads its commits again instead of reusing records that never saw its files."""
    return hashlib.sha1("\0".join(source_pathspecs()).encode()).hexdigest()[:8]


class HistoryCache:
    """A SQLite table `sha -> record` under a key that names what a record holds (`parse_key`) and the files it
    covers: records read under another key are not reused."""

    def __init__(self, path: str | Path, parse_key: str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.version = f"{CACHE_VERSION}-{sources_key()}"
        self.key = f"{self.version}:{parse_key}"
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), timeout=60, check_same_thread=False)
        with self._db:
            self._db.execute("CREATE TABLE IF NOT EXISTS commits (key TEXT, sha TEXT, record TEXT, "
                             "PRIMARY KEY (key, sha))")
            self._db.execute("CREATE TABLE IF NOT EXISTS renames (key TEXT, sha TEXT, pairs TEXT, "
                             "PRIMARY KEY (key, sha))")

    def _select(self, table: str, column: str, key: str, shas: Iterable[str]) -> list[tuple[str, str]]:
        """(sha, stored text) of the cached `shas` in `table` under `key`, 500 shas per query."""
        rows: list[tuple[str, str]] = []
        shas = list(shas)
        with self._lock:
            for start in range(0, len(shas), 500):
                batch = shas[start: start + 500]
                rows += self._db.execute(
                    f"SELECT sha, {column} FROM {table} WHERE key = ? AND sha IN ({','.join('?' * len(batch))})",
                    [key, *batch]).fetchall()
        return rows

    def get_many(self, shas: Iterable[str]) -> dict[str, CommitRecord | None]:
        """Cached shas -> record (None: the commit changed no source file); unknown shas are absent."""
        return {sha: CommitRecord.from_dict(json.loads(record)) if record else None
                for sha, record in self._select("commits", "record", self.key, shas)}

    def put_many(self, records: dict[str, CommitRecord | None]) -> None:
        with self._lock, self._db:
            self._db.executemany("INSERT OR REPLACE INTO commits VALUES (?, ?, ?)",
                                 [(self.key, sha, json.dumps(r.to_dict()) if r else "") for sha, r in records.items()])

    def get_renames(self, shas: Iterable[str]) -> dict[str, list[tuple[str, str]]]:
        """Scanned shas -> the source file renames (old, new) each made against its first parent ([] for none); shas
        never scanned are absent. Renames are facts of a commit, so they do not depend on the parse key."""
        return {sha: [(old, new) for old, new in json.loads(pairs)]
                for sha, pairs in self._select("renames", "pairs", self.version, shas)}

    def put_renames(self, renames: dict[str, list[tuple[str, str]]]) -> None:
        with self._lock, self._db:
            self._db.executemany("INSERT OR REPLACE INTO renames VALUES (?, ?, ?)",
                                 [(self.version, sha, json.dumps(pairs)) for sha, pairs in renames.items()])

    def close(self) -> None:
        self._db.close()

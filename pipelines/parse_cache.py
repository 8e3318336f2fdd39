"""Parsed-file cache for incremental indexing: an unchanged blob is never parsed twice.

Keyed by (repo, path, blob sha, parser version): chunk ids depend on repo and path, and a parser
change must invalidate old entries. One SQLite file (stdlib, safe for concurrent readers).
"""

from __future__ import annotations

import pickle
import sqlite3
import threading
from pathlib import Path
from typing import Any

PARSER_VERSION = "7"  # 7: positional local types, containers, loops, callbacks, class attribute types
_SCHEMA = "CREATE TABLE IF NOT EXISTS parsed (key TEXT PRIMARY KEY, value BLOB NOT NULL)"
_BUSY_TIMEOUT_S = 30.0
_SQL_BATCH = 500  # below SQLite's host-parameter limit


class ParseCache:
    """Pickled `ParsedFile` records by blob."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), timeout=_BUSY_TIMEOUT_S, check_same_thread=False)
        self._db.execute(_SCHEMA)
        self._db.commit()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(repo: str, path: str, blob_sha: str) -> str:
        return f"{PARSER_VERSION}\x00{repo}\x00{path}\x00{blob_sha}"

    def get_many(self, keys: list[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        with self._lock:
            for start in range(0, len(keys), _SQL_BATCH):
                batch = keys[start : start + _SQL_BATCH]
                marks = ",".join("?" * len(batch))
                for key, value in self._db.execute(f"SELECT key, value FROM parsed WHERE key IN ({marks})", batch):
                    try:
                        found[key] = pickle.loads(value)
                    except Exception:  # an entry from an incompatible build: parse again
                        continue
        self.hits += len(found)
        self.misses += len(keys) - len(found)
        return found

    def put_many(self, items: dict[str, Any]) -> None:
        with self._lock:
            self._db.executemany(
                "INSERT OR REPLACE INTO parsed (key, value) VALUES (?, ?)",
                [(k, pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL)) for k, v in items.items()],
            )
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()

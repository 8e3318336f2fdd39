"""Parsed-file cache for incremental indexing: an unchanged blob is never parsed twice.

Keyed by content, (path, blob sha, parser version, the version of the file's language family), not by
the repository's published name: a second branch (`NAME@BRANCH`), a fork or a renamed repository reuses
every file whose path and bytes match.
Chunk and symbol records carry the repository they were parsed for, so `rebrand` re-stamps a hit
parsed under another name (chunk ids are derived from repo, path, lines and content). A parser change
must invalidate old entries. One SQLite file (stdlib, safe for concurrent readers).
"""

from __future__ import annotations

import dataclasses
import pickle
import sqlite3
import threading
from pathlib import Path
from typing import Any

from pipelines.parse.facts import ParsedFile
from pipelines.parse.families import family_of_language
from semantica.languages import language_of
from semantica.schema import make_chunk_id

PARSER_VERSION = "11"  # 11: rustdoc across `#[attr]`, no `//!` docs on items; 10: doc comments above wrapped
# definitions (`export function`);
# 9: Rust use trees split per path and `mod x;` imports, Go imports on their own lines;
# 8: keyed by content (no repository name) + positional local types, containers, loops,
# callbacks, class attribute types, every call line; 6: module-level variable types
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
    def key(path: str, blob_sha: str) -> str:
        """The same path with the same bytes parses the same in every repository and branch (with the same
        family module: a language registered or changed at run time must not meet another's parse)."""
        family = family_of_language(language_of(path))
        parser = f"{PARSER_VERSION}:{family.name}:{family.version}" if family is not None else PARSER_VERSION
        return f"{parser}\x00{path}\x00{blob_sha}"

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


def rebrand(parsed: ParsedFile, repo: str) -> ParsedFile:
    """`parsed` as if parsed for `repo`: the records that name the repository and the chunk ids derived
    from it are re-stamped (a new object; the cached one is left as it is). Same repo: returned as is."""
    if parsed.repo == repo:
        return parsed
    ids: dict[str, str] = {}
    chunks = []
    for chunk in parsed.chunks:
        new_id = make_chunk_id(repo, chunk.path, chunk.start_line, chunk.end_line, chunk.content_sha)
        ids[chunk.chunk_id] = new_id
        chunks.append(dataclasses.replace(chunk, chunk_id=new_id, repo=repo))
    symbols = [dataclasses.replace(s, repo=repo, chunk_id=ids.get(s.chunk_id, s.chunk_id)) for s in parsed.symbols]
    edges = [dataclasses.replace(e, repo=repo) for e in parsed.edges]
    return dataclasses.replace(parsed, repo=repo, chunks=chunks, symbols=symbols, edges=edges)

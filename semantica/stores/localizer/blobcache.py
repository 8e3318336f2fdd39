"""The localizer's per-file work (function spans, term counts of the file, its functions' bodies and names)
cached on disk by language and git blob sha, so a snapshot of a nearby commit (which shares almost every blob) only
tokenizes and parses the files that changed, across processes and runs (as the parse cache does for chunks).

A file's term counts are stored against the file's own term list (local ids), never against a vocabulary
id: every `SnapshotBuilder` grows its own vocabulary, so the ids are mapped on load.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import zlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np

from semantica.languages.spans import file_spans, spans_key
from semantica.stores.tokenizer import tokenize

CACHE_VERSION = "lb2"
"""Bumped when the tokenizer, the function spans or the stored layout change: older rows are then ignored."""
CACHE_FILE = "localizer-blobs.sqlite"


def blob_sha(text: str) -> str:
    """Git's blob sha of the text's UTF-8 bytes (the id `git ls-tree` shows for a UTF-8 file)."""
    data = text.encode("utf-8", "surrogatepass")
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def blob_key(path: str, text: str) -> str:
    """What a parse is kept under: what the file's spans depend on (`spans_key`: its language, and whether it is a
    declaration file) and its blob sha; the same bytes under another suffix are another parse."""
    return f"{spans_key(path)}:{blob_sha(text)}"


@dataclass
class ParsedBlob:
    """One file's parse: its line count, outer function spans and the term counts of its documents
    (`docs[0]` the whole file, then each function's body, then each function's qualified name), each as
    (indices into `terms`, counts)."""

    lines: int
    spans: list[tuple[str, int, int]]
    terms: list[str]
    docs: list[tuple[np.ndarray, np.ndarray]]

    @classmethod
    def parse(cls, path: str, text: str) -> ParsedBlob:
        """`path` names the file's language (its function spans' grammar) and whether it is a declaration file."""
        lines = text.split("\n")
        spans = [(s.qualname, s.start, s.end) for s in file_spans(path, text)]
        # a token never spans a line, so each line is tokenized once and a body is a run of lines
        line_tokens = [tokenize(line) for line in lines]
        token_lists = [chain.from_iterable(line_tokens), *(chain.from_iterable(line_tokens[a - 1: b]) for _, a, b in spans),
                       *(tokenize(q) for q, _, _ in spans)]
        local: dict[str, int] = {}
        docs = []
        for tokens in token_lists:
            counts = Counter(tokens)
            ids = np.fromiter((local.setdefault(t, len(local)) for t in counts), dtype=np.int32, count=len(counts))
            docs.append((ids, np.fromiter(counts.values(), dtype=np.int32, count=len(counts))))
        return cls(len(lines), spans, list(local), docs)

    def pack(self) -> tuple[int, str, str, bytes]:
        sizes = np.array([len(ids) for ids, _ in self.docs], dtype=np.int32)
        flat = [sizes] + [a for ids, tfs in self.docs for a in (ids, tfs)]
        payload = zlib.compress(np.concatenate(flat).astype(np.int32).tobytes(), 1)
        return self.lines, json.dumps(self.spans), "\n".join(self.terms), payload

    @classmethod
    def unpack(cls, lines: int, spans: str, terms: str, payload: bytes) -> ParsedBlob:
        span_list = [(q, int(a), int(b)) for q, a, b in json.loads(spans)]
        n_docs = 1 + 2 * len(span_list)
        flat = np.frombuffer(zlib.decompress(payload), dtype=np.int32)
        sizes, offset, docs = flat[:n_docs], n_docs, []
        for size in sizes:
            docs.append((flat[offset: offset + size], flat[offset + size: offset + 2 * size]))
            offset += 2 * size
        return cls(lines, span_list, terms.split("\n") if terms else [], docs)


class BlobCache:
    """A SQLite table `blob key -> ParsedBlob` (shared by every repository: a key names one content in one
    language, `blob_key`)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), timeout=60, check_same_thread=False)
        with self._db:
            self._db.execute("CREATE TABLE IF NOT EXISTS blobs (version TEXT, sha TEXT, lines INTEGER, spans TEXT, "
                             "terms TEXT, payload BLOB, PRIMARY KEY (version, sha))")

    def get_many(self, shas: Iterable[str]) -> dict[str, ParsedBlob]:
        out: dict[str, ParsedBlob] = {}
        shas = list(shas)
        with self._lock:
            for start in range(0, len(shas), 500):
                batch = shas[start: start + 500]
                rows = self._db.execute(
                    "SELECT sha, lines, spans, terms, payload FROM blobs WHERE version = ? AND sha IN "
                    f"({','.join('?' * len(batch))})", [CACHE_VERSION, *batch]).fetchall()
                for sha, lines, spans, terms, payload in rows:
                    out[sha] = ParsedBlob.unpack(lines, spans, terms, payload)
        return out

    def put_many(self, parsed: dict[str, ParsedBlob]) -> None:
        if not parsed:
            return
        with self._lock, self._db:
            self._db.executemany("INSERT OR REPLACE INTO blobs VALUES (?, ?, ?, ?, ?, ?)",
                                 [(CACHE_VERSION, sha, *p.pack()) for sha, p in parsed.items()])

    def close(self) -> None:
        self._db.close()


def open_blob_cache(cache_file: str, cache_dir: str | Path | None) -> BlobCache | None:
    """`localizer.blob_cache_file`: 'off' disables; '' is `<cache_dir>/localizer-blobs.sqlite` (no cache where
    no cache directory is known)."""
    if cache_file == "off":
        return None
    if cache_file:
        return BlobCache(cache_file)
    return BlobCache(Path(cache_dir) / CACHE_FILE) if cache_dir else None

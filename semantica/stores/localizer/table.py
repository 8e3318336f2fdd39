"""A snapshot's source files (every language with function spans) as the localizer sees them: four BM25 fields
over files and functions.

Fields: a file's whole text, its path, each outer function's body (nested functions folded in, as in
the SWE-bench gold) and its qualified name. Functions come from tree-sitter through the language table
(`semantica.languages.spans`), the same spans the corpus labels come from (jobs/train/pairs_source.function_spans).
`LocalizerTableBuilder` keeps each file's term counts by language and blob sha in memory and, given a `BlobCache`, on
disk, so building the next snapshot of the same repository (in this process or a later one) only parses the files
that changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from semantica.stores.function_keys import function_key
from semantica.stores.localizer.blobcache import BlobCache, ParsedBlob, blob_key
from semantica.stores.localizer.bm25 import Bm25Field, TermCounts, Vocabulary, term_counts
from semantica.stores.localizer.path_words import path_text, splits_compounds

BM25_K1, BM25_B = 1.2, 0.75  # Lucene's defaults (its BM25Similarity)


@dataclass
class FunctionDoc:
    key: str
    path: str
    qualname: str
    start: int
    end: int
    position: int  # order in its file, from 0


@dataclass
class FileDoc:
    path: str
    lines: int
    functions: list[FunctionDoc] = field(default_factory=list)
    names: frozenset[str] = frozenset()  # lowercased names its functions and classes define


@dataclass
class _Parsed:
    lines: int
    spans: list[tuple[str, int, int]]
    content: TermCounts
    bodies: list[TermCounts]
    names: list[TermCounts]


class LocalizerTable:
    """The four fields of one snapshot (file order: sorted paths; function order: file order, then source)."""

    def __init__(self, files: list[FileDoc], fields: dict[str, Bm25Field], vocab: Vocabulary) -> None:
        self.files = files
        self.functions = [f for doc in files for f in doc.functions]
        self.fields = fields
        self.vocab = vocab
        self.file_index = {doc.path: i for i, doc in enumerate(files)}
        self.function_index = {f.key: i for i, f in enumerate(self.functions)}
        self.derived: dict[type, Any] = {}  # per-snapshot tables a query reads, built once by their owner (by type)


class LocalizerTableBuilder:
    """Builds `LocalizerTable`s from {path: text}; one builder per repository reuses term counts across snapshots,
    and an optional `BlobCache` across processes."""

    def __init__(self, cache: BlobCache | None = None) -> None:
        self.vocab = Vocabulary()
        self.cache = cache
        self._parsed: dict[str, _Parsed] = {}
        self._paths: dict[tuple[str, str], TermCounts] = {}  # (path, blob key or ""): only a glued name needs the blob
        self.parsed_here = 0  # files parsed by this builder (neither in memory nor in the cache)

    def _to_vocab(self, blob: ParsedBlob) -> _Parsed:
        ids = np.fromiter((self.vocab.ids.setdefault(t, len(self.vocab.ids)) for t in blob.terms), dtype=np.int32,
                          count=len(blob.terms))
        docs = [TermCounts(ids[local], tfs.astype(np.float32)) for local, tfs in blob.docs]
        n = len(blob.spans)
        return _Parsed(blob.lines, blob.spans, docs[0], docs[1: 1 + n], docs[1 + n:])

    def _parse_all(self, texts: dict[str, str]) -> dict[str, str]:
        """path -> blob key, every key parsed into `self._parsed` (memory, then the cache, then parsing)."""
        digests = {path: blob_key(path, text) for path, text in texts.items()}
        missing = {d: p for p, d in digests.items() if d not in self._parsed}
        found = self.cache.get_many(missing) if self.cache is not None and missing else {}
        fresh: dict[str, ParsedBlob] = {}
        for digest, path in missing.items():
            blob = found.get(digest)
            if blob is None:
                blob = fresh[digest] = ParsedBlob.parse(path, texts[path])
            self._parsed[digest] = self._to_vocab(blob)
        self.parsed_here += len(fresh)
        if self.cache is not None:
            self.cache.put_many(fresh)
        return digests

    def _path_counts(self, path: str, digest: str, parsed: _Parsed) -> TermCounts:
        key = (path, digest if splits_compounds(path) else "")
        if key not in self._paths:
            self._paths[key] = term_counts(self.vocab, path_text(path, (q for q, _, _ in parsed.spans)))
        return self._paths[key]

    def build(self, texts: dict[str, str]) -> LocalizerTable:
        files: list[FileDoc] = []
        content, paths, bodies, names = [], [], [], []
        digests = self._parse_all(texts)
        for path in sorted(texts):
            parsed = self._parsed[digests[path]]
            functions = [FunctionDoc(function_key(path, q), path, q, a, b, n) for n, (q, a, b) in enumerate(parsed.spans)]
            defined = {part.lower() for q, _, _ in parsed.spans for part in q.split(".")}
            files.append(FileDoc(path, parsed.lines, functions, frozenset(defined)))
            content.append(parsed.content)
            paths.append(self._path_counts(path, digests[path], parsed))
            bodies.extend(parsed.bodies)
            names.extend(parsed.names)
        n = len(self.vocab.ids)
        fields = {"content": Bm25Field(content, n, BM25_K1, BM25_B), "path": Bm25Field(paths, n, BM25_K1, BM25_B),
                  "body": Bm25Field(bodies, n, BM25_K1, BM25_B), "name": Bm25Field(names, n, BM25_K1, BM25_B)}
        return LocalizerTable(files, fields, self.vocab)

"""A snapshot's Python files as the localizer sees them: four BM25 fields over files and functions.

Fields: a file's whole text, its path, each outer function's body (nested functions folded in, as in
the SWE-bench gold) and its qualified name. Functions come from the stdlib `ast`, the same spans the
corpus labels come from (jobs/train/pairs_source.function_spans). `SnapshotBuilder` keeps each
document text's term counts, so building the next snapshot of the same repository is cheap.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from semantica.granular import function_key
from semantica.history.gitread import function_spans
from serving.core.localizer.bm25 import Bm25Field, TermCounts, Vocabulary, term_counts

PATH_WORDS = re.compile(r"[/._\-]+")
BM25_K1, BM25_B = 1.2, 0.75  # Lucene's defaults, as the granular shards use


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


class Snapshot:
    """The four fields of one snapshot (file order: sorted paths; function order: file order, then source)."""

    def __init__(self, files: list[FileDoc], fields: dict[str, Bm25Field], vocab: Vocabulary) -> None:
        self.files = files
        self.functions = [f for doc in files for f in doc.functions]
        self.fields = fields
        self.vocab = vocab
        self.file_index = {doc.path: i for i, doc in enumerate(files)}
        self.function_index = {f.key: i for i, f in enumerate(self.functions)}


class SnapshotBuilder:
    """Builds `Snapshot`s from {path: text}; one builder per repository reuses term counts across snapshots."""

    def __init__(self) -> None:
        self.vocab = Vocabulary()
        self._parsed: dict[str, _Parsed] = {}
        self._paths: dict[str, TermCounts] = {}

    def _parse(self, text: str) -> _Parsed:
        digest = hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()
        parsed = self._parsed.get(digest)
        if parsed is None:
            lines = text.split("\n")
            spans = [(s.qualname, s.start, s.end) for s in function_spans(text)]
            parsed = _Parsed(len(lines), spans, term_counts(self.vocab, text),
                             [term_counts(self.vocab, "\n".join(lines[a - 1: b])) for _, a, b in spans],
                             [term_counts(self.vocab, q) for q, _, _ in spans])
            self._parsed[digest] = parsed
        return parsed

    def _path_counts(self, path: str) -> TermCounts:
        if path not in self._paths:
            self._paths[path] = term_counts(self.vocab, PATH_WORDS.sub(" ", path.removesuffix(".py")))
        return self._paths[path]

    def build(self, texts: dict[str, str]) -> Snapshot:
        files: list[FileDoc] = []
        content, paths, bodies, names = [], [], [], []
        for path in sorted(texts):
            parsed = self._parse(texts[path])
            functions = [FunctionDoc(function_key(path, q), path, q, a, b, n) for n, (q, a, b) in enumerate(parsed.spans)]
            defined = {part.lower() for q, _, _ in parsed.spans for part in q.split(".")}
            files.append(FileDoc(path, parsed.lines, functions, frozenset(defined)))
            content.append(parsed.content)
            paths.append(self._path_counts(path))
            bodies.extend(parsed.bodies)
            names.extend(parsed.names)
        n = len(self.vocab.ids)
        fields = {"content": Bm25Field(content, n, BM25_K1, BM25_B), "path": Bm25Field(paths, n, BM25_K1, BM25_B),
                  "body": Bm25Field(bodies, n, BM25_K1, BM25_B), "name": Bm25Field(names, n, BM25_K1, BM25_B)}
        return Snapshot(files, fields, self.vocab)

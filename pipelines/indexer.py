"""THE indexing driver: plan (caches) -> parse -> embed -> resolve -> write -> graph-store load -> publish.

Long because it is the one driver: not split, since its stages share one plan, one set of caches and one
publish order, and a second module would hold half of one sequence.

One driver for `semantica index` (one repository, `LocalRunner`) and `semantica index-batch` (a
manifest, `pipelines.ray_job.RayRunner`): only where the per-file work runs differs, so both publish
identical chunks, symbols and edges, cache the same verdicts and load the same graph store.

- plan: discover each repository; a file whose blob is in the parse cache with every chunk in the
  embedding cache is done here, a file whose bytes were already refused (binary, not UTF-8) keeps
  its cached verdict; the rest become `FileTask`s for the runner.
- per repository: resolve edges, write the snapshot into `<snapshot>.tmp`, load the graph store
  (Memgraph when `graph.store: memgraph`; before publish, so a failure keeps the old snapshot
  current), publish. One repository failing does not stop the others (`run`); `index` raises.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pipelines.discover import RepoSource, repo_name_from_path
from pipelines.function_vectors import FileFunctions, FunctionVectorPass, StoredFunctions, functions_key
from pipelines.history.gitread import GitReadError
from pipelines.history.reader import read_snapshot_history
from pipelines.manifest import RepoSpec, open_spec
from pipelines.parse import GraphResolver, ParsedFile, parse_problems
from pipelines.parse_cache import ParseCache, rebrand
from pipelines.runner import FileOutcome, FileTask, LocalRunner, Runner, embedding_cache, function_pass
from pipelines.source_files import FileEntry
from pipelines.source_record import record_source
from pipelines.summary import (  # noqa: F401 (re-exported: callers import the summaries from the driver)
    STATUS_OK,
    BatchSummary,
    IndexSummary,
    RepoResult,
    peak_rss_mb,
)
from pipelines.token_cache import TokenVectorBuilder, new_token_builder
from pipelines.write import SnapshotContent, SnapshotWriter
from semantica.config import Config
from semantica.layout import IndexLayout
from semantica.ondisk.branch_keys import keep_for
from semantica.ondisk.build_stats import build_stats_path, record_build
from semantica.ondisk.repo_names import normalize_repo_name
from semantica.ondisk.snapshot_paths import SnapshotPaths
from semantica.runtime.encoder import Encoder, shared_encoder
from semantica.schema import FileError
from semantica.stores import memgraph  # its client is looked up per call (a test records it there)
from semantica.stores.exact.store import StoredFile
from semantica.stores.graph import GRAPH_STORE_MEMGRAPH
from semantica.stores.index_kinds.exact import stored

PARSE_CACHE_FILE = "parsed.sqlite"
ERROR_KEY_PREFIX = "error\x00"  # parse-cache keys of files whose bytes cannot be indexed
CACHEABLE_ERROR_STAGE = "discover"  # verdicts decided by a blob's bytes alone
ERROR_SAMPLES = 20
DENSE_KINDS = ("faiss", "tokens", "function_vectors")  # the kinds model passes build (`index.dense_later`)
FIRST_ANSWER_STAGE = "first_answer"  # seconds from the run's start to the first snapshot's publish
HISTORY_THREADS = 1  # the runs' repositories' histories are read one after another, beside parse and embed


@dataclass
class _RepoWork:
    """One repository on its way through the driver."""

    spec: RepoSpec
    result: RepoResult
    source: RepoSource | None = None
    entries: list[FileEntry] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    parsed: dict[str, ParsedFile] = field(default_factory=dict)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    functions: dict[str, FileFunctions] = field(default_factory=dict)  # the dense channel's, by path (channel on)
    functions_encoded: int = 0
    snapshot_id: str = ""
    paths: SnapshotPaths | None = None
    include: list[str] = field(default_factory=list)  # the manifest entry's globs, else discover.include_globs
    source_record: dict[str, Any] = field(default_factory=dict)  # semantica.ondisk.source.SourceRecord (freshness)
    excluded: list[str] = field(default_factory=list)  # paths the manifest's `exclude` dropped
    history: tuple[Any] | None = None  # (history,) once read, None before: a successor snapshot reuses it
    history_read: Future[Any] | None = None  # the history being read beside parse and embed (`_read_histories`)


class SourceTexts:
    """The indexed files' text for the exact index kind, read again from the source only for the shards
    that changed (an unchanged shard is linked and its files are not read)."""

    def __init__(self, source: RepoSource, entries: list[FileEntry]) -> None:
        self.source = source
        self.files = [(e.path, e.blob_sha) for e in entries]
        self.bytes = sum(e.size for e in entries)
        self._entries = {e.path: e for e in entries}

    def read(self, wanted: list[tuple[str, str]]) -> Iterator[StoredFile]:
        return stored(self.source.read([self._entries[path] for path, _ in wanted]))


@contextmanager
def _timed(result: IndexSummary, stage: str) -> Iterator[None]:
    start = time.perf_counter()
    yield
    result.seconds[stage] = round(result.seconds.get(stage, 0.0) + time.perf_counter() - start, 3)


class Indexer:
    """Indexes repositories through a runner and publishes one snapshot each, atomically."""

    def __init__(self, config: Config, runner: Runner | None = None,
                 encoder_factory: Callable[[], Encoder] | None = None, progress: bool = True,
                 log: Callable[[str], None] | None = None) -> None:
        self.config = config
        self._encoder_factory = encoder_factory or (lambda: shared_encoder(config.encoder))
        self.runner = runner or LocalRunner(config, self._encoder_factory, progress)
        self.tokens: TokenVectorBuilder | None = None
        self.functions: FunctionVectorPass | None = None  # the dense function channel's cache, per run
        self._followers: dict[str, list[_RepoWork]] = {}  # per run: works that take another work's task outcome
        self._warm: dict[str, ParsedFile] = {}  # the last one-repository run's parses by content key (watch, sync)
        self._identity: tuple[str, int] = ("", 0)  # (encoder model id, dim), resolved by the plan of each run
        self.layout = IndexLayout(config.paths.index_root, config.index.stale_build_s)
        self.cache_dir = Path(config.paths.cache_dir)
        self.writer = SnapshotWriter(config)
        first = [kind for kind in config.index.kinds if kind not in DENSE_KINDS]
        self.first_writer = SnapshotWriter(dataclasses.replace(config, index=dataclasses.replace(config.index,
                                                                                                 kinds=first)))
        self._parsed_first: set[str] = set()  # content keys parsed for this run's first snapshot
        self.resolver = GraphResolver()
        self.log = log or (lambda message: None)

    def index(self, repo_path: str, name: str | None = None, commit: str | None = None) -> IndexSummary:
        """One repository; any failure raises and leaves the previous snapshot current."""
        repo = normalize_repo_name(name if name is not None else repo_name_from_path(repo_path))  # before any work
        spec = RepoSpec(name=repo, path=repo_path, commit=commit or "")
        summary = self._run([spec], raise_errors=True)
        result = summary.repos[0]
        fields = {f.name for f in dataclasses.fields(IndexSummary)}
        return IndexSummary(**{k: v for k, v in asdict(result).items() if k in fields})

    def run(self, specs: list[RepoSpec]) -> BatchSummary:
        """Every repository of a manifest; one failing is reported with its reason, the rest go on."""
        return self._run(specs, raise_errors=False)

    def _run(self, specs: list[RepoSpec], raise_errors: bool) -> BatchSummary:
        start = time.perf_counter()
        works = [_RepoWork(spec=s, result=RepoResult(repo=s.name)) for s in specs]
        summary = BatchSummary(repos=[w.result for w in works],
                               ray_address=getattr(self.runner, "address", "") or "local")
        parse_cache = ParseCache(self.cache_dir / PARSE_CACHE_FILE)
        histories = ThreadPoolExecutor(max_workers=HISTORY_THREADS, thread_name_prefix="history")
        try:
            live = [w for w in works if self._guard(w, raise_errors, self._discover)]
            self._read_histories(live, histories)
            if live:
                tasks = self._plan(live, parse_cache)
                if tasks and self._dense_later(live):
                    self._publish_first(live[0], tasks, parse_cache, start)
                if tasks:
                    summary.ray_used = self.runner.remote
                    summary.files_through_ray = len(tasks) if self.runner.remote else 0
                    self._absorb(live, tasks, parse_cache, raise_errors)
                for work in live:
                    if not work.result.reason:
                        self._guard(work, raise_errors, self._publish)
                self._keep_warm(live)
        except BaseException:  # a failure outside one repository's stages (encoder, caches): drop every build
            for work in works:
                if work.snapshot_id and work.result.status != STATUS_OK:
                    self.layout.discard(work.spec.name, work.snapshot_id)
            raise
        finally:
            histories.shutdown(wait=True, cancel_futures=True)
            parse_cache.close()
            elapsed = time.perf_counter() - start
            for result in summary.repos:  # for /metrics: semantica_index_builds{repo,outcome}
                record_build(build_stats_path(self.config), result.repo, elapsed / len(summary.repos),
                             ok=result.status == STATUS_OK)
        summary.seconds = round(time.perf_counter() - start, 3)
        summary.peak_rss_mb = round(peak_rss_mb(), 1)
        for result in summary.repos:
            result.peak_rss_mb = summary.peak_rss_mb
        return summary

    def _read_histories(self, works: list[_RepoWork], pool: ThreadPoolExecutor) -> None:
        """Start reading each repository's history (git log with diffs: seconds, mostly git's own) beside the parse
        and the model passes, which do not need it; `_publish` takes it when it writes the snapshot."""
        if self.config.history.index:
            for work in works:
                work.history_read = pool.submit(self._history, work)

    def _dense_later(self, works: list[_RepoWork]) -> bool:
        """`index.dense_later` for one repository (`semantica index`, or an `index-batch` of one on Ray): a batch of
        several publishes each once, after the model passes."""
        return self.config.index.dense_later and len(works) == 1

    def _publish_first(self, work: _RepoWork, tasks: list[FileTask], parse_cache: ParseCache, start: float) -> None:
        """Parse the tasks (the runner's `parse`: here, or on Ray) and publish a first snapshot of `work` without the
        model-built kinds (its manifest lists them as `pending`); the tasks keep their parses, so the runner then only
        runs the model passes and the driver publishes the complete successor. The first snapshot is atomic like any
        other."""
        first = dataclasses.replace(work, result=RepoResult(repo=work.spec.name), errors=list(work.errors),
                                    parsed=dict(work.parsed), vectors={}, functions={})
        with _timed(work.result, "parse"):
            outcomes = self.runner.parse(tasks)
        fresh: dict[str, Any] = {}
        for task, outcome in zip(tasks, outcomes):
            if outcome.error is not None:  # the runner meets it again; the first snapshot lists it too
                first.errors.append(outcome.error)
            if outcome.parsed is None:
                continue
            if task.parsed is None:
                fresh[outcome.key] = outcome.parsed
                self._parsed_first.add(outcome.key)
            task.parsed = first.parsed[outcome.path] = outcome.parsed
        parse_cache.put_many(fresh)
        self._guard(first, True, lambda w: self._publish(w, first=True))
        work.history = first.history
        work.snapshot_id, work.paths = self.layout.begin(work.spec.name, work.source.commit or "")
        work.result.snapshot_id = work.snapshot_id
        work.result.seconds[FIRST_ANSWER_STAGE] = round(time.perf_counter() - start, 3)
        self.log(f"{work.spec.name}: first snapshot {first.snapshot_id} answers; building {', '.join(DENSE_KINDS)}")

    def _keep_warm(self, works: list[_RepoWork]) -> None:
        """Keep a one-repository run's parsed files in memory: the next sync of the same tree (watch) then
        reads none of them back from the parse cache. A batch keeps nothing (its memory is released)."""
        self._warm = {}
        if len(works) == 1 and works[0].result.status == STATUS_OK:
            work = works[0]
            self._warm = {ParseCache.key(e.path, e.blob_sha): work.parsed[e.path] for e in work.entries
                          if e.path in work.parsed}

    def _guard(self, work: _RepoWork, raise_errors: bool, stage: Callable[[_RepoWork], None]) -> bool:
        """Run one repository's stage; on failure discard its build and record (or raise) the reason."""
        try:
            stage(work)
            return True
        except BaseException as exc:
            if work.snapshot_id:
                self.layout.discard(work.spec.name, work.snapshot_id)
                work.snapshot_id = ""
            if raise_errors or not isinstance(exc, Exception):
                raise
            work.result.reason = f"{type(exc).__name__}: {exc}"
            self.log(f"{work.spec.name}: failed: {work.result.reason}")
            return False

    # -- stages ----------------------------------------------------------------------------------

    def _discover(self, work: _RepoWork) -> None:
        spec, result = work.spec, work.result
        with _timed(result, "discover"):
            def remember(source: RepoSource) -> None:  # before discovery hashes the files (see semantica.ondisk.freshness)
                work.source_record = record_source(source, spec.commit or spec.branch or None, self.config).to_dict()

            opened = open_spec(spec, self.config.discover, self.cache_dir, self.config.ray.clone_timeout_s,
                               before_listing=remember)
        source = work.source = opened.source
        work.include, work.entries, work.excluded = opened.include, opened.entries, opened.excluded
        work.errors = [dataclasses.replace(e, repo=spec.name) for e in opened.found.errors]
        result.commit = source.commit or "worktree"
        work.snapshot_id, work.paths = self.layout.begin(spec.name, source.commit or "")
        result.snapshot_id = work.snapshot_id
        self.log(f"{spec.name}: {len(work.entries)} files to index")

    def _plan(self, works: list[_RepoWork], parse_cache: ParseCache) -> list[FileTask]:
        """Files already parsed with every chunk embedded are done here; the rest become tasks."""
        self._identity = model_id, dim = self.runner.identity()  # once per run; publish reuses it
        embed_cache = embedding_cache(self.config, model_id, dim)
        self.tokens = self._token_builder(model_id, dim)
        self.functions = function_pass(self.config)
        self._tokens_counted = 0
        tasks: list[FileTask] = []
        leaders: dict[str, FileTask] = {}  # content key -> its one task in this run (branches share files)
        self._followers: dict[str, list[_RepoWork]] = {}
        for work in works:
            assert work.source is not None
            with _timed(work.result, "plan"):
                keys = {e.path: ParseCache.key(e.path, e.blob_sha) for e in work.entries}
                cold = [k for k in keys.values() if k not in self._warm]
                listed = [functions_key(k) for k in keys.values()] if self.functions is not None else []
                cached = {**parse_cache.get_many(cold + [ERROR_KEY_PREFIX + k for k in cold] + listed),
                          **{k: self._warm[k] for k in keys.values() if k in self._warm}}
                for entry in work.entries:
                    key = keys[entry.path]
                    known_error = cached.get(ERROR_KEY_PREFIX + key)
                    if isinstance(known_error, FileError):  # same blob, same verdict
                        work.errors.append(dataclasses.replace(known_error, repo=work.spec.name))
                        work.result.files_reused += 1
                        continue
                    parsed = cached.get(key)
                    if parsed is not None:  # by content: parsed for another branch or repository is re-stamped
                        parsed = rebrand(parsed, work.spec.name)
                        found = embed_cache.get_many([c.content_sha for c in parsed.chunks])
                        functions = self._cached_functions(entry.path, cached.get(functions_key(key)))
                        if len(found) == len({c.content_sha for c in parsed.chunks}) and functions is not None:
                            work.parsed[entry.path] = parsed
                            work.vectors[entry.path] = _stack([found[c.content_sha] for c in parsed.chunks], dim)
                            if self.functions is not None:
                                work.functions[entry.path] = functions
                            work.result.files_reused += 1
                            continue
                    if key in leaders and leaders[key].repo != work.spec.name:  # another branch's task parses it
                        self._followers.setdefault(key, []).append(work)
                        continue
                    leaders[key] = FileTask(repo=work.spec.name, repo_path=work.source.repo_path,
                                            commit=work.source.commit or "", include=work.include,
                                            path=entry.path, blob_sha=entry.blob_sha, size=entry.size,
                                            language=entry.language, key=key, parsed=parsed)
                    tasks.append(leaders[key])
        return tasks

    def _cached_functions(self, path: str, pairs: list[tuple[str, str]] | None) -> FileFunctions | None:
        """A planned-as-done file's function vectors from the cache: none needed with the channel off or for a file
        it leaves out; None (the file becomes a task) when its list or one of its vectors is not cached."""
        if self.functions is None or not self.functions.covers(path):
            return FileFunctions()
        return self.functions.lookup(pairs) if pairs is not None else None

    def _absorb(self, works: list[_RepoWork], tasks: list[FileTask], parse_cache: ParseCache,
                raise_errors: bool) -> None:
        """Run the tasks and fold their outcomes into each repository; a runner failure fails its repos."""
        by_name = {w.spec.name: w for w in works}
        involved = sorted({t.repo for t in tasks} | {w.spec.name for f in self._followers.values() for w in f})
        start = time.perf_counter()
        try:
            outcomes = self.runner.run(tasks, self.tokens)
        except Exception as exc:
            if raise_errors:
                raise
            for name in involved:
                self._guard(by_name[name], False, _raiser(exc))
            return
        fresh: dict[str, Any] = {}
        for outcome in outcomes:
            for follower in self._followers.get(outcome.key, []):  # the same file on another branch: not parsed again
                self._follow(follower, outcome)
            work = by_name[outcome.repo]
            if outcome.error is not None:
                work.errors.append(outcome.error)
                if outcome.error.stage == CACHEABLE_ERROR_STAGE:
                    fresh[ERROR_KEY_PREFIX + outcome.key] = outcome.error
                continue
            self._take(work, outcome, fresh)
        parse_cache.put_many(fresh)
        elapsed = round(time.perf_counter() - start, 3)
        for name in involved:
            by_name[name].result.seconds["parse+embed"] = elapsed

    def _take(self, work: _RepoWork, outcome: FileOutcome, fresh: dict[str, Any]) -> None:
        assert outcome.parsed is not None
        if outcome.parsed_now or outcome.key in self._parsed_first:
            fresh[outcome.key] = outcome.parsed
            work.result.files_parsed += 1
        else:
            work.result.files_reused += 1
        work.parsed[outcome.path] = outcome.parsed
        work.vectors[outcome.path] = outcome.vectors
        work.result.chunks_embedded += outcome.embedded
        work.result.chunks_token_encoded += outcome.tokens_encoded  # on a Ray worker, in the embedding pass
        if outcome.functions is not None:
            work.functions[outcome.path] = outcome.functions
            work.functions_encoded += outcome.functions_encoded
            if self.functions is not None and self.functions.covers(outcome.path):  # planned as done next time
                fresh[functions_key(outcome.key)] = outcome.functions.pairs()

    @staticmethod
    def _follow(work: _RepoWork, outcome: FileOutcome) -> None:
        """Another repository's (or branch's) outcome for the same path and blob, re-stamped for `work`."""
        if outcome.error is not None:
            work.errors.append(dataclasses.replace(outcome.error, repo=work.spec.name))
            return
        assert outcome.parsed is not None
        work.parsed[outcome.path] = rebrand(outcome.parsed, work.spec.name)
        work.vectors[outcome.path] = outcome.vectors
        if outcome.functions is not None:
            work.functions[outcome.path] = outcome.functions
        work.result.files_reused += 1

    def _publish(self, work: _RepoWork, first: bool = False) -> None:
        """Write, load and publish one repository's snapshot; `first`: without the model-built kinds
        (`_publish_first`), which its manifest lists as pending."""
        result, spec = work.result, work.spec
        assert work.source is not None and work.paths is not None
        model_id, dim = self._identity
        order = [e.path for e in work.entries if e.path in work.parsed]
        parsed = [work.parsed[p] for p in order]
        with _timed(result, "resolve"):
            edges = self.resolver.resolve(parsed)
        chunks = [c for p in parsed for c in p.chunks]
        blocks = [] if first else [work.vectors[p] for p in order if len(work.parsed[p].chunks)]
        vectors = np.concatenate(blocks).astype(np.float32) if blocks else np.zeros((0, dim), dtype=np.float32)
        if len(vectors) != len(chunks) and not first:
            raise RuntimeError(f"{len(vectors)} vectors for {len(chunks)} chunks")
        symbols = [s for p in parsed for s in p.symbols]
        work.errors.extend(parse_problems(parsed))  # files indexed only in part (windows, unparsed regions)
        for error in work.errors:  # discovery names the repo after its directory; the snapshot uses the name
            error.repo = spec.name
        result.files, result.chunks, result.symbols = len(parsed), len(chunks), len(symbols)
        result.edges, result.errors = len(edges), len(work.errors)
        result.chunks_reused = result.chunks - result.chunks_embedded
        result.error_samples = [{"path": e.path, "stage": e.stage, "reason": e.reason}
                                for e in work.errors[:ERROR_SAMPLES]]
        if self.tokens is not None and not first:  # chunks whose sentence vector was cached but whose tokens were not
            with _timed(result, "tokens"):
                length = self.config.late_interaction.doc_max_length  # the encoder loads only if one is missing
                self.tokens.fill(chunks, lambda texts: self._encoder_factory().encode_tokens(texts, length),
                                 self.config.encoder.group_texts)
            # encoded in this run (the runner's shared pass included), counted against the first repository published
            result.chunks_token_encoded += self.tokens.encoded - self._tokens_counted
            self._tokens_counted = self.tokens.encoded
        if work.history is None:
            history = None
            if self.config.history.index:
                with _timed(result, "history"):  # the wait for the read `_read_histories` started
                    history = work.history_read.result() if work.history_read is not None else self._history(work)
            work.history = (history,)
        (history,) = work.history
        content = SnapshotContent(repo=spec.name, commit=work.source.commit or "", chunks=chunks, vectors=vectors,
                                  symbols=symbols, edges=edges, errors=work.errors, model_id=model_id,
                                  stats={"seconds": result.seconds, "runner": type(self.runner).__name__},
                                  token_vectors=self.tokens, files={e.path: e.blob_sha for e in work.entries},
                                  skipped=[e.path for e in work.errors] + work.excluded, source=work.source_record,
                                  history=history,
                                  functions=None if first else self._stored_functions(work),
                                  pending=[k for k in DENSE_KINDS if k in self.config.index.kinds] if first else [],
                                  texts=SourceTexts(work.source, [e for e in work.entries if e.path in work.parsed]))
        with _timed(result, "write"), self.layout.pin_current(spec.name) as previous:  # pruned only after linking
            writer = self.first_writer if first else self.writer
            written = writer.write(work.paths, dataclasses.replace(content, previous=previous))
        result.shards_linked = sum(written.reuse.linked.values())
        result.shards_written = sum(written.reuse.written.values())
        graph_db = self._graph_db_loader()
        if graph_db is not None:  # before publish: a graph-store failure keeps the old snapshot current
            with _timed(result, "graph_db"):
                graph_db.load(spec.name, work.snapshot_id, symbols, chunks, edges, delete_superseded=False)
        with _timed(result, "publish"):
            keep = keep_for(spec.name, self.config.index.keep_snapshots, self.config.branches.keep_snapshots,
                            self.config.branches.keep)
            final = self.layout.publish(spec.name, work.snapshot_id, keep, written.trusted)
        if graph_db is not None:
            graph_db.delete_superseded(spec.name, work.snapshot_id)
        result.status, result.snapshot_path = STATUS_OK, str(final)
        self.log(f"{spec.name}: published {work.snapshot_id} ({result.chunks} chunks, {result.errors} errors)")

    def _stored_functions(self, work: _RepoWork) -> StoredFunctions | None:
        """What the `function_vectors` index kind writes: every parsed file's function vectors (the runner's)."""
        if self.functions is None:
            return None
        files = {path: work.functions[path] for path in work.parsed if path in work.functions}
        return StoredFunctions(self.functions.model_id, self.config.localizer.dense_max_length, self.functions.dim,
                               files, work.functions_encoded)

    def _history(self, work: _RepoWork) -> Any:
        """The snapshot's history (semantica.stores.history): the first-parent commits at or before the indexed commit
        (HEAD for a working tree), read through the sha cache; None when off or the source has no commits."""
        source = work.source
        if not self.config.history.index or source is None or source.empty:
            return None
        h = self.config.history
        try:
            return read_snapshot_history(h, h.cache_file or self.cache_dir / "history.sqlite", source.repo_path,
                                         source.commit)
        except GitReadError as exc:  # history is a feature of the snapshot, not a condition of publishing it
            self.log(f"{work.spec.name}: history skipped: {exc}")
            return None

    def _token_builder(self, model_id: str, dim: int) -> TokenVectorBuilder | None:
        """Stored token vectors for late interaction (`new_token_builder`); one kept builder (and its loaded
        cache index) serves the next run of the same model."""
        kept = self.tokens
        if kept is not None and kept.codec is not None and (kept.model_id, kept.source_dim) == (model_id, dim) \
                and self.config.token_vectors.enabled and not self.config.late_interaction.model_path:
            kept.encoded = 0
            return kept
        return new_token_builder(self.config, model_id, dim)

    def _graph_db_loader(self) -> Any:
        """A Memgraph loader when `graph.store: memgraph`; the embedded store reads the snapshot itself."""
        if self.config.graph.store != GRAPH_STORE_MEMGRAPH:
            return None
        return memgraph.MemgraphLoader(memgraph.connect(self.config.graph.memgraph_uri))


def _raiser(exc: Exception) -> Callable[[_RepoWork], None]:
    def stage(_: _RepoWork) -> None:
        raise exc

    return stage


def _stack(vectors: list[np.ndarray], dim: int) -> np.ndarray:
    return np.stack(vectors).astype(np.float32) if vectors else np.zeros((0, dim), dtype=np.float32)


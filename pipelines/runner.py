"""Runners: where the indexer's per-file work (read + parse + every model pass over cache misses: chunk vectors,
token vectors from the same pass, the dense function channel's vectors) runs.

`Indexer` plans which files need work and hands them to a runner as `FileTask`s; the runner gives
back one `FileOutcome` per task. `LocalRunner` does it in this process (CLI, tests, evaluation);
`pipelines.ray_job.RayRunner` does the same on Ray Data (`index-batch`). Nothing else differs, so the
two publish identical snapshots.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from pipelines.discover import RepoSource
from pipelines.embed import ChunkEmbedder, EmbeddingCache, TokenSink, embed_files
from pipelines.function_vectors import FileFunctions, FunctionVectorPass, channel_enabled, function_cache_dir
from pipelines.overlap import Prefetcher, partitions
from pipelines.parse import FileParser, ParsedFile
from pipelines.progress import StageProgress
from pipelines.source_files import FileEntry
from semantica.config import Config
from semantica.runtime.encoder import Encoder, encoder_identity, shared_encoder
from semantica.schema import FileError
from semantica.stores.localizer.dense import channel_encoder_config

EMBEDDINGS_DIR = "embeddings"


@dataclass
class FileTask:
    """One file that needs reading, parsing or embedding; `parsed` is set when only embedding is missing."""

    repo: str
    repo_path: str
    commit: str
    include: list[str]
    path: str
    blob_sha: str
    size: int
    language: str
    key: str
    parsed: ParsedFile | None = None

    def entry(self) -> FileEntry:
        return FileEntry(self.path, self.blob_sha, self.size, self.language)


@dataclass
class FileOutcome:
    """A task's result: the parsed file and its chunk vectors, or the error that kept it out."""

    repo: str
    path: str
    key: str
    parsed: ParsedFile | None = None
    error: FileError | None = None
    vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    embedded: int = 0
    parsed_now: bool = True
    tokens_encoded: int = 0  # chunks whose token vectors a remote worker computed and cached
    functions: FileFunctions | None = None  # the dense function channel's vectors (None: channel off)
    functions_encoded: int = 0


class Runner(Protocol):
    """Runs file tasks somewhere; `remote` says whether it left this process (reported in summaries)."""

    remote: bool

    def identity(self) -> tuple[str, int]:
        """(encoder model id, dim): names the embedding cache and the snapshot's encoder."""
        ...

    def parse(self, tasks: list[FileTask]) -> list[FileOutcome]:
        """Read and parse only, outcomes in task order: the first phase of `index.dense_later`, whose tasks then
        carry their parses into `run`."""
        ...

    def run(self, tasks: list[FileTask], tokens: TokenSink | None = None) -> list[FileOutcome]:
        """Outcomes in task order; `tokens` may collect token vectors from the same encoder pass."""
        ...


def source_for(task: FileTask, config: Config) -> RepoSource:
    """The `RepoSource` a task's bytes come from (the same discovery settings the plan used)."""
    discover = dataclasses.replace(config.discover, include_globs=list(task.include))
    return RepoSource(task.repo_path, task.commit or None, discover)


def parse_tasks(tasks: list[FileTask], config: Config, parser: FileParser,
                progress: Callable[[int], None] | None = None) -> list[FileOutcome]:
    """Read and parse the tasks (grouped by source); one bad file becomes an error outcome, never a crash."""
    outcomes: dict[int, FileOutcome] = {}
    groups: dict[tuple[str, str, tuple[str, ...]], list[int]] = defaultdict(list)
    for number, task in enumerate(tasks):
        if task.parsed is not None:
            outcomes[number] = FileOutcome(task.repo, task.path, task.key, parsed=task.parsed, parsed_now=False)
        else:
            groups[(task.repo_path, task.commit, tuple(task.include))].append(number)
    for numbers in groups.values():
        group = [tasks[n] for n in numbers]
        try:
            items = list(source_for(group[0], config).read([t.entry() for t in group]))
        except Exception as exc:  # the whole source cannot be read: every file gets the reason
            for n, task in zip(numbers, group):
                outcomes[n] = FileOutcome(task.repo, task.path, task.key,
                                          error=FileError(task.repo, task.path, "read", f"{type(exc).__name__}: {exc}"))
            continue
        for n, task, item in zip(numbers, group, items):
            if progress:
                progress(1)
            if isinstance(item, FileError):
                outcomes[n] = FileOutcome(task.repo, task.path, task.key, error=dataclasses.replace(item, repo=task.repo))
                continue
            try:
                outcomes[n] = FileOutcome(task.repo, task.path, task.key, parsed=parser.parse(task.repo, item))
            except Exception as exc:  # one bad file must not stop the run: record it and go on
                outcomes[n] = FileOutcome(task.repo, task.path, task.key,
                                          error=FileError(task.repo, task.path, "parse", f"{type(exc).__name__}: {exc}"))
    return [outcomes[n] for n in range(len(tasks))]


def embed_outcomes(outcomes: list[FileOutcome], embedder: ChunkEmbedder,
                   progress: Callable[[int], None] | None = None) -> None:
    """Fill each parsed outcome's vectors (cache misses encoded once, batched across files)."""
    ok = [o for o in outcomes if o.parsed is not None]
    for outcome, (vectors, embedded) in zip(ok, embed_files(embedder, [o.parsed.chunks for o in ok], progress)):
        outcome.vectors, outcome.embedded = vectors, embedded


_OPEN_CACHES: dict[tuple[str, str, int, int], EmbeddingCache] = {}
_OPEN_CACHES_LOCK = threading.Lock()
MAX_OPEN_CACHES = 4  # (cache dir, model, dim, length) kept loaded per process


def open_vector_cache(directory: Path, model_id: str, dim: int, max_length: int) -> EmbeddingCache:
    """A content-addressed vector cache, loaded once per process and refreshed with new segments on each call: a
    watch or sync loop does not read every cached vector from disk again for each run."""
    key = (str(Path(directory).expanduser().resolve()), model_id, dim, max_length)
    with _OPEN_CACHES_LOCK:
        cache = _OPEN_CACHES.pop(key, None)
        if cache is None:
            cache = EmbeddingCache(Path(directory), model_id, dim, max_length)
        _OPEN_CACHES[key] = cache  # most recently used last
        while len(_OPEN_CACHES) > MAX_OPEN_CACHES:
            _OPEN_CACHES.pop(next(iter(_OPEN_CACHES)))
    cache.refresh()
    return cache


def embedding_cache(config: Config, model_id: str, dim: int) -> EmbeddingCache:
    """The chunk embedding cache (`<cache_dir>/embeddings/`)."""
    return open_vector_cache(Path(config.paths.cache_dir) / EMBEDDINGS_DIR, model_id, dim, config.encoder.max_length)


def function_pass(config: Config) -> FunctionVectorPass | None:
    """The dense function channel's pass over the shared function-vector cache; None when the index stores none.
    Named without loading the channel's encoder (it loads on the first cache miss)."""
    if not channel_enabled(config):
        return None
    model_id, dim = encoder_identity(channel_encoder_config(config.localizer, config.encoder))
    cache = open_vector_cache(function_cache_dir(config), model_id, dim, config.localizer.dense_max_length)
    return FunctionVectorPass(config, cache, model_id, dim)


def encode_functions(outcomes: list[FileOutcome], functions: FunctionVectorPass | None,
                     progress: Callable[[int], None] | None = None) -> None:
    """Fill each parsed outcome's function vectors (cache misses encoded once, batched across files)."""
    if functions is None:
        return
    ok = [o for o in outcomes if o.parsed is not None]
    for outcome, (found, encoded) in zip(ok, functions.fill([o.parsed for o in ok], progress)):
        outcome.functions, outcome.functions_encoded = found, encoded


class LocalRunner:
    """Parses and embeds in this process, with a progress bar per stage when stderr is a terminal."""

    remote = False

    def __init__(self, config: Config, encoder_factory: Callable[[], Encoder] | None = None,
                 progress: bool = True) -> None:
        self.config = config
        self._encoder_factory = encoder_factory or (lambda: shared_encoder(config.encoder))
        self.progress = progress  # a bar on a terminal, else one line per stage (pipelines/progress.py)
        self.parser = FileParser(config.chunk)

    def identity(self) -> tuple[str, int]:
        encoder = self._encoder_factory()
        return encoder.model_id, encoder.dim

    def parse(self, tasks: list[FileTask]) -> list[FileOutcome]:
        return parse_tasks(tasks, self.config, self.parser)

    def _bar(self, total: int, desc: str, unit: str) -> StageProgress:
        return StageProgress(desc, unit, total, enabled=self.progress)

    def run(self, tasks: list[FileTask], tokens: TokenSink | None = None) -> list[FileOutcome]:
        """Parse and embed the tasks; with `index.overlap_files` > 0 the next partition of files is parsed on
        a thread while the encoder embeds this one (the only writer stays the driver: outcomes come back in
        task order, identical to parsing everything first)."""
        encoder = self._encoder_factory()
        # token vectors from the same forward pass when they are stored at the embedding's length
        shared_pass = tokens is not None and self.config.late_interaction.doc_max_length == self.config.encoder.max_length
        embedder = ChunkEmbedder(encoder.encode, encoder.dim, embedding_cache(self.config, encoder.model_id, encoder.dim),
                                 self.config.encoder.group_texts, self.config.encoder.cache_segment_vectors,
                                 encode_with_tokens=encoder.encode_with_tokens if shared_pass else None,
                                 token_sink=tokens if shared_pass else None)
        functions = function_pass(self.config)
        parse_bar, embed_bar = self._bar(len(tasks), "parse", "files"), self._bar(0, "embed", "chunks")
        function_bar = self._bar(0, "functions", "functions")

        def encoded(count: int) -> None:  # only cache misses are counted: the total grows with them
            function_bar.total = function_bar.total + count
            function_bar.update(count)

        def parse(part: list[FileTask]) -> list[FileOutcome]:
            parsed = parse_tasks(part, self.config, self.parser, parse_bar.update)
            embed_bar.total = (embed_bar.total or 0) + sum(len(o.parsed.chunks) for o in parsed if o.parsed is not None)
            return parsed

        outcomes: list[FileOutcome] = []
        parts = partitions(tasks, self.config.index.overlap_files)
        ahead = Prefetcher(parse, self.config.index.overlap_depth, "index-parse")
        for part in ahead.run(parts) if len(parts) > 1 else map(parse, parts):
            embed_outcomes(part, embedder, embed_bar.update)
            encode_functions(part, functions, encoded)
            outcomes.extend(part)
        parse_bar.close()
        embed_bar.close()
        function_bar.close()
        return outcomes

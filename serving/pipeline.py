"""The in-process query pipeline: the same stage classes the Ray Serve graph wraps, in one process.

validate -> intent -> retrievers (vector alongside symbol -> lexical -> graph seeded by them)
-> weighted RRF + consensus -> learning-to-rank (when a model is configured) -> late interaction -> cross-encoder (conditional) -> context,
with per-stage timings, a `degraded` list for stages that failed but did not sink the answer,
and an LRU cache keyed by snapshot ids, query and parameters.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any

from semantica.config import Config, GranularConfig, QueryConfig
from semantica.encoder import Encoder, safe_name, shared_encoder
from semantica.hits import ChunkMeta, Hit, RankedList, Strategy
from semantica.schema import Chunk
from semantica.snapshot import Snapshot, SnapshotSet
from serving.context import Context, ContextBuilder
from serving.cross_encoder import CrossEncoderReranker
from serving.fusion import ExpansionMatcher, WeightedRRF
from serving.granular_fusion import GranularFusion, GranularLists
from serving.intent import IntentClassifier, IntentResult
from serving.late_interaction import LateInteractionReranker, TokenEmbeddingCache
from serving.ltr import LtrReranker
from serving.retrievers.base import Filters, RetrievalQuery, ScoredList, merge_scored, to_ranked
from serving.retrievers.granular import GranularRetriever, granular_lists
from serving.retrievers.graph import GraphRetriever, is_test_path
from serving.retrievers.lexical import LexicalRetriever
from serving.retrievers.symbol import SymbolRetriever
from serving.retrievers.vector import VectorRetriever

FUNCTION_KINDS = frozenset({"function", "method"})
PATH_MATCH = "path"
LATE_CACHE_DIR = "late_tokens"


class QueryError(ValueError):
    """The request itself is wrong (HTTP 400/422); the message says how to fix it."""


@dataclass
class SearchRequest:
    """One search. `repos` empty = every indexed repository; `strategies` empty = all four."""

    query: str
    repos: list[str] = field(default_factory=list)
    k: int = 10
    path_globs: list[str] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)
    explain: bool = False
    context_budget: int | None = None
    strategies: list[str] = field(default_factory=list)
    late_interaction: bool | None = None
    cross_encoder: bool | None = None
    ltr: bool | None = None

    def cache_key(self, snapshot_ids: tuple[str, ...]) -> tuple:
        return (snapshot_ids, self.query, self.k, tuple(self.path_globs), tuple(self.languages), self.explain,
                self.context_budget, tuple(sorted(self.strategies)), self.late_interaction, self.cross_encoder,
                self.ltr)


@dataclass
class HitView:
    """A hit as the API returns it."""

    rank: int
    chunk_id: str
    repo: str
    path: str
    start_line: int
    end_line: int
    symbol: str
    kind: str
    score: float
    fused_score: float
    ranks: dict[str, int]
    citation: str
    content: str
    late_score: float | None = None
    cross_score: float | None = None
    ltr_score: float | None = None
    features: list[float] | None = None
    explanation: str | None = None


@dataclass
class SearchResponse:
    """What a search returns (the `--json` and HTTP schema)."""

    query: str
    intent: dict[str, Any]
    hits: list[HitView]
    files: list[dict[str, Any]]
    functions: list[dict[str, Any]]
    context: dict[str, Any]
    degraded: list[dict[str, str]]
    warnings: list[str]
    timings_ms: dict[str, float]
    snapshots: dict[str, str]
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class RepoRetrievers:
    """The four retrievers over one snapshot, built once per snapshot."""

    def __init__(self, snapshot: Snapshot, encoder_factory: Callable[[], Encoder]) -> None:
        self.snapshot = snapshot
        self._encoder_factory = encoder_factory

    @cached_property
    def vector(self) -> VectorRetriever:
        encoder = self._encoder_factory()
        return VectorRetriever(self.snapshot.vector_shards, self.snapshot.chunks, encoder.encode_query)

    @cached_property
    def lexical(self) -> LexicalRetriever:
        return LexicalRetriever(self.snapshot.lucene_shards, self.snapshot.chunk_by_id)

    @cached_property
    def symbol(self) -> SymbolRetriever:
        return SymbolRetriever(self.snapshot.symbols, self.snapshot.chunk_by_id,
                               self.snapshot.config.retrieval.symbol_fuzzy_max_names)

    @cached_property
    def granular(self) -> GranularRetriever:
        return GranularRetriever(self.snapshot)

    @cached_property
    def graph(self) -> GraphRetriever:
        s = self.snapshot
        return GraphRetriever(s.graph_store, s.symbols, s.chunks, s.pagerank, s.config.graph)


class StageTimer:
    """Wall-clock milliseconds per stage."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}

    def run(self, stage: str, fn: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        try:
            return fn()
        finally:
            self.ms[stage] = round(self.ms.get(stage, 0.0) + (time.perf_counter() - start) * 1000, 3)


class SearchPipeline:
    """Answers `SearchRequest`s over the published snapshots under one index root."""

    def __init__(self, config: Config, snapshots: SnapshotSet | None = None,
                 encoder_factory: Callable[[], Encoder] | None = None) -> None:
        self.config = config
        self.snapshots = snapshots or SnapshotSet(config)
        self._encoder_factory = encoder_factory or (lambda: shared_encoder(config.encoder))
        self.intent = IntentClassifier(config.intent)
        self.fusion = WeightedRRF(config.fusion)
        self.context_builder = ContextBuilder(config.context)
        self.localizer = Localizer(config.query, self.fusion, config.granular)
        self._retrievers: dict[str, RepoRetrievers] = {}
        self._cache: OrderedDict[tuple, SearchResponse] = OrderedDict()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=len(Strategy), thread_name_prefix="retrieve")

    # -- lazily built optional stages ----------------------------------------------------------

    @cached_property
    def late(self) -> LateInteractionReranker:
        from pathlib import Path

        li = self.config.late_interaction
        encoder = self._encoder_factory()
        # one token cache per model and truncation length: vectors never mix
        model_dir = f"{safe_name(li.model_path or encoder.model_id)}-len{li.doc_max_length}"
        cache = TokenEmbeddingCache(Path(self.config.paths.cache_dir) / LATE_CACHE_DIR / model_dir,
                                    li.memory_cache_items, li.dtype)
        return LateInteractionReranker(li, encoder, cache)

    @cached_property
    def cross(self) -> CrossEncoderReranker:
        return CrossEncoderReranker.from_config(self.config.cross_encoder)

    @cached_property
    def ltr(self) -> LtrReranker:
        """Runs where the pipeline runs (also in the Serve ingress): a few trees over <= top_n rows."""
        return LtrReranker.from_config(self.config.ltr)

    # -- validation ----------------------------------------------------------------------------

    def validate(self, request: SearchRequest) -> list[str]:
        """Raise QueryError for a request that cannot be answered; return warnings for fixed ones."""
        warnings: list[str] = []
        if not isinstance(request.query, str) or not request.query.strip():
            raise QueryError("query is empty: pass some text, an identifier or a question")
        if isinstance(request.k, bool) or not isinstance(request.k, int) or request.k <= 0:
            raise QueryError(f"k must be a positive integer, got {request.k!r}")
        if request.k > self.config.query.max_k:
            raise QueryError(f"k={request.k} is above the maximum {self.config.query.max_k}")
        for name in request.strategies:
            Strategy.parse(name)
        if len(request.query) > self.config.query.max_query_chars:
            request.query = request.query[: self.config.query.max_query_chars]
            warnings.append(f"query truncated to its first {self.config.query.max_query_chars} characters")
        cleaned = request.query.encode("utf-8", "replace").decode("utf-8")
        if cleaned != request.query:
            request.query = cleaned
            warnings.append("query held invalid characters (lone surrogates); they were replaced")
        return warnings

    def _repos(self, request: SearchRequest) -> list[Snapshot]:
        names = request.repos or self.snapshots.repos()
        if not names:
            raise QueryError("no repository is indexed yet: run `semantica index --repo PATH` first")
        return [self.snapshots.get(name) for name in names]  # UnknownRepoError for an unknown one

    def retrievers(self, snapshot: Snapshot) -> RepoRetrievers:
        with self._lock:
            current = self._retrievers.get(snapshot.repo)
            if current is None or current.snapshot is not snapshot:
                current = self._retrievers[snapshot.repo] = RepoRetrievers(snapshot, self._encoder_factory)
            return current

    # -- the work ------------------------------------------------------------------------------

    def search(self, request: SearchRequest) -> SearchResponse:
        timer = StageTimer()
        warnings = timer.run("validate", lambda: self.validate(request))
        snapshots = self._repos(request)
        key = request.cache_key(tuple(s.snapshot_id for s in snapshots))
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                cached = self._cache[key]
                return SearchResponse(**{**cached.__dict__, "cached": True})
        response, _ = self._search(request, snapshots, timer, warnings)
        if not response.degraded:
            with self._lock:
                self._cache[key] = response
                while len(self._cache) > self.config.query.query_cache_items:
                    self._cache.popitem(last=False)
        return response

    def search_with_lists(self, request: SearchRequest) -> tuple[SearchResponse, dict[Strategy, RankedList]]:
        """One uncached search that also returns each retriever's ranked chunk list: the offline jobs
        that learn or replay the later stages (`semantica mine`) need both from the same pass."""
        timer = StageTimer()
        warnings = timer.run("validate", lambda: self.validate(request))
        return self._search(request, self._repos(request), timer, warnings)

    def _search(self, request: SearchRequest, snapshots: list[Snapshot], timer: StageTimer,
                warnings: list[str]) -> tuple[SearchResponse, dict[Strategy, RankedList]]:
        intent = timer.run("intent", lambda: self.intent.classify(request.query))
        enabled = {Strategy.parse(s) for s in request.strategies} or set(Strategy)
        filters = Filters(path_globs=list(request.path_globs), languages=list(request.languages))
        degraded: list[dict[str, str]] = []
        lists = self._retrieve(request.query, intent, snapshots, enabled, filters, timer, degraded)
        chunks: dict[str, Chunk] = {}
        for snapshot in snapshots:
            chunks.update(snapshot.chunk_by_id)
        depth = max(request.k, self.config.query.file_rank_depth)
        meta = {cid: ChunkMeta.from_chunk(chunks[cid]) for ranked in lists.values() for cid, _ in ranked if cid in chunks}
        fused = timer.run("fusion", lambda: self.fusion.fuse(lists, intent, meta, request.k))  # max(k, intent cutoff)
        hits = self._rerank(request, intent, [h for h in fused if h.chunk_id in chunks], chunks, timer, degraded)
        granular = None
        if self.config.granular.enabled:
            try:
                granular = timer.run("granular", lambda: granular_lists(
                    request.query, [self.retrievers(s).granular for s in snapshots], self.config.granular, filters))
            except Exception as exc:  # optional lists: localization falls back to the chunk lists
                degraded.append({"stage": "granular", "error": f"{type(exc).__name__}: {exc}"})
        files, functions = timer.run("localize", lambda: self.localizer.localize(lists, chunks, intent, depth, granular))
        top = hits[: request.k]
        context = timer.run("context", lambda: self.context_builder.build(
            top, chunks, self._file_lines(snapshots), request.context_budget))
        response = SearchResponse(
            query=request.query,
            intent={"dominant": intent.dominant.value,
                    "probabilities": {i.value: round(p, 4) for i, p in intent.probabilities.items()},
                    "expansions": asdict(intent.expansions)},
            hits=[self._view(rank, hit, chunks[hit.chunk_id], request.explain) for rank, hit in enumerate(top, 1)],
            files=files, functions=functions, context=_context_dict(context), degraded=degraded,
            warnings=warnings, timings_ms=timer.ms, snapshots={s.repo: s.snapshot_id for s in snapshots},
        )
        return response, lists

    def _retrieve(self, query: str, intent: IntentResult, snapshots: list[Snapshot], enabled: set[Strategy],
                  filters: Filters, timer: StageTimer, degraded: list[dict[str, str]]) -> dict[Strategy, RankedList]:
        k = self.config.retrieval.k_per_retriever
        scored: dict[Strategy, list[ScoredList]] = {s: [] for s in enabled}

        def attempt(strategy: Strategy, fn: Callable[[], ScoredList]) -> ScoredList:
            try:
                return timer.run(strategy.value, fn)
            except Exception as exc:  # a failing index degrades the answer, it does not fail it
                degraded.append({"stage": strategy.value, "error": f"{type(exc).__name__}: {exc}"})
                return []

        for snapshot in snapshots:
            retrievers = self.retrievers(snapshot)
            rq = RetrievalQuery(text=query, intent=intent)
            vector_future = (self._pool.submit(attempt, Strategy.VECTOR, lambda: retrievers.vector.search_scored(rq, k, filters))
                             if Strategy.VECTOR in enabled else None)
            lexical_future = (self._pool.submit(attempt, Strategy.LEXICAL, lambda: retrievers.lexical.search_scored(rq, k, filters))
                              if Strategy.LEXICAL in enabled else None)
            symbol_hits = attempt(Strategy.SYMBOL, lambda: retrievers.symbol.search_scored(rq, k, filters)) \
                if Strategy.SYMBOL in enabled else []
            lexical_hits = lexical_future.result() if lexical_future else []
            if Strategy.SYMBOL in enabled:
                scored[Strategy.SYMBOL].append(symbol_hits)
            if Strategy.LEXICAL in enabled:
                scored[Strategy.LEXICAL].append(lexical_hits)
            if Strategy.GRAPH in enabled:
                seeds = _interleave([c for c, _ in symbol_hits], [c for c, _ in lexical_hits])
                graph_query = RetrievalQuery(text=query, intent=intent, seeds=seeds,
                                             symbol_seeds=[c for c, _ in symbol_hits])
                scored[Strategy.GRAPH].append(
                    attempt(Strategy.GRAPH, lambda: retrievers.graph.search_scored(graph_query, k, filters)))
            if vector_future:
                scored[Strategy.VECTOR].append(vector_future.result())
        return {s: to_ranked(merge_scored(lists, k)) for s, lists in scored.items()}

    def _rerank(self, request: SearchRequest, intent: IntentResult, hits: list[Hit], chunks: dict[str, Chunk],
                timer: StageTimer, degraded: list[dict[str, str]]) -> list[Hit]:
        use_ltr = self.config.ltr.enabled if request.ltr is None else request.ltr
        if use_ltr and hits:
            try:
                hits = timer.run("ltr", lambda: self.ltr.rerank(hits, chunks, request.query, intent))
            except Exception as exc:  # optional stage: a missing or stale model falls back to the fused order
                degraded.append({"stage": "ltr", "error": f"{type(exc).__name__}: {exc}"})
        use_late = self.config.late_interaction.enabled if request.late_interaction is None else request.late_interaction
        if use_late and hits:
            try:
                hits = timer.run("late_interaction", lambda: self.late.rerank(request.query, hits, chunks))
            except Exception as exc:  # optional stage: fall back to the fused order
                degraded.append({"stage": "late_interaction", "error": f"{type(exc).__name__}: {exc}"})
        use_cross = self.config.cross_encoder.enabled if request.cross_encoder is None else request.cross_encoder
        if use_cross and hits and self.cross.should_run(request.query, intent):
            hits = timer.run("cross_encoder", lambda: self.cross.rerank(request.query, hits, chunks))  # fails loudly
        return hits

    @staticmethod
    def _file_lines(snapshots: list[Snapshot]) -> Callable[[str, str], list[str]]:
        by_repo = {s.repo: s for s in snapshots}

        def lines(repo: str, path: str) -> list[str]:
            snapshot = by_repo.get(repo)
            return snapshot.file_lines(path) if snapshot else []

        return lines

    @staticmethod
    def _view(rank: int, hit: Hit, chunk: Chunk, explain: bool) -> HitView:
        return HitView(
            rank=rank, chunk_id=hit.chunk_id, repo=chunk.repo, path=chunk.path, start_line=chunk.start_line,
            end_line=chunk.end_line, symbol=chunk.symbol, kind=chunk.kind, score=round(hit.score, 6),
            fused_score=round(hit.fused_score, 6), ranks=dict(hit.ranks),
            citation=f"{chunk.path}:{chunk.start_line}-{chunk.end_line}", content=chunk.content,
            late_score=hit.late_score, cross_score=hit.cross_score, ltr_score=hit.ltr_score,
            features=list(hit.features) if explain else None, explanation=hit.explanation if explain else None,
        )


class Localizer:
    """Ranks files and functions: where an agent should look or patch.

    Rank-first at the file (and function) level: each strategy's chunk list becomes a file list
    (a file takes its best chunk's rank), the file lists are fused with the same weighted RRF and
    consensus as chunks — so a file that the lexical and the vector retriever reach through
    different chunks gets the consensus it deserves. Only `query.localize_strategies` vote (vector
    and lexical by default: on the SWE-bench dev split the symbol and graph lists, built from the
    many identifiers of a long bug report, diluted file and function rankings; they still shape the
    chunk hits, where short identifier and "who calls" queries need them). Files named in the query
    are boosted; test files are damped (a fix lands in the code
    under test far more often than in the test).
    """

    def __init__(self, config: QueryConfig, fusion: WeightedRRF, granular: GranularConfig | None = None) -> None:
        self.config = config
        self.fusion = fusion
        self.granular = GranularFusion(granular or GranularConfig())

    @staticmethod
    def _project(ranked: RankedList, key_of: Callable[[str], str | None]) -> RankedList:
        """A chunk ranking -> a ranking of keys (file or function), each at its best chunk's rank."""
        out: dict[str, int] = {}
        for chunk_id, _ in ranked:
            key = key_of(chunk_id)
            if key is not None and key not in out:
                out[key] = len(out) + 1
        return list(out.items())

    def _rank(self, lists: dict[Strategy, RankedList], key_of: Callable[[str], str | None],
              intent: IntentResult, path_of: Callable[[str], str], depth: int,
              voters: set[Strategy] | None = None,
              adjust: Callable[[dict[str, float]], dict[str, float]] | None = None) -> list[tuple[str, float]]:
        projected = {s: self._project(ranked, key_of) for s, ranked in lists.items() if voters is None or s in voters}
        fused = self.fusion.fuse(projected, intent, None, k=sum(len(v) for v in projected.values()))
        base = {hit.chunk_id: hit.score for hit in fused}
        if adjust is not None:  # granular BM25 lists and candidates (serving/granular_fusion.py)
            base = adjust(base)
        matcher = ExpansionMatcher(intent.expansions)
        scored: list[tuple[str, float]] = []
        for key, score in base.items():
            path = path_of(key)
            if is_test_path(path):
                score *= self.config.localize_test_factor
            if matcher.match(ChunkMeta(path=path)).startswith(PATH_MATCH):
                score *= self.config.localize_path_boost
            scored.append((key, score))
        return sorted(scored, key=lambda item: -item[1])[:depth]

    def localize(self, lists: dict[Strategy, RankedList], chunks: dict[str, Chunk],
                 intent: IntentResult, depth: int,
                 granular: GranularLists | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        def file_of(chunk_id: str) -> str | None:
            chunk = chunks.get(chunk_id)
            return f"{chunk.repo}\x00{chunk.path}" if chunk else None

        def function_of(chunk_id: str) -> str | None:
            chunk = chunks.get(chunk_id)
            if chunk is None or chunk.kind not in FUNCTION_KINDS or not chunk.symbol:
                return None
            return f"{chunk.repo}\x00{chunk.path}::{chunk.symbol}"

        def path_of(key: str) -> str:
            return key.split("\x00", 1)[1].split("::", 1)[0]

        voters = {Strategy.parse(s) for s in self.config.localize_strategies}
        if not voters & set(lists):
            voters = set(lists)  # an ablation without any of them: let what ran vote
        use_granular = granular is not None and self.granular.config.enabled
        files = self._rank(lists, file_of, intent, path_of, depth, voters,
                           (lambda s: self.granular.files(s, granular)) if use_granular else None)
        ranked_files = [key for key, _ in files]
        functions = self._rank(lists, function_of, intent, path_of, depth, voters,
                               (lambda s: self.granular.functions(s, granular, ranked_files)) if use_granular else None)
        return ([{"repo": k.split("\x00")[0], "path": k.split("\x00")[1], "score": round(v, 6)} for k, v in files],
                [{"repo": k.split("\x00")[0], "function": k.split("\x00")[1], "score": round(v, 6)}
                 for k, v in functions])


def _interleave(first: list[str], second: list[str]) -> list[str]:
    """Seeds alternate symbol and lexical hits so both sources are represented."""
    out: list[str] = []
    for a, b in zip(first, second):
        out.extend([a, b])
    longer = first if len(first) > len(second) else second
    out.extend(longer[min(len(first), len(second)):])
    return list(dict.fromkeys(out))


def _context_dict(context: Context) -> dict[str, Any]:
    return {"blocks": [asdict(b) for b in context.blocks], "tokens_used": context.tokens_used,
            "budget": context.budget, "truncated": context.truncated, "text": context.render()}

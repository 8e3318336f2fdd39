"""The in-process query pipeline: the same stage classes the Ray Serve graph wraps, in one process.

validate -> intent -> retrievers (vector alongside symbol -> lexical -> graph seeded by them)
-> weighted RRF + consensus -> learning-to-rank (when a model is configured) -> late interaction -> cross-encoder (conditional) -> context,
with per-stage timings, a `degraded` list for stages that failed but did not sink the answer,
and an LRU cache keyed by snapshot ids, query and parameters.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from functools import cached_property
from typing import Any

from semantica.api import HitView, QueryError, SearchRequest, SearchResponse
from semantica.config import Config
from semantica.encoder import Encoder, safe_name, shared_encoder
from semantica.errors import public_message
from semantica.hits import ChunkMeta, Hit, RankedList, Strategy
from semantica.languages import KNOWN_LANGUAGES
from semantica.layout import BrokenSnapshotError, normalize_repo_name, split_branch_key
from semantica.schema import Chunk
from semantica.snapshot import Snapshot, SnapshotSet
from semantica.token_vectors import StoredTokenVectors
from serving.context import Context, ContextBuilder
from serving.cross_encoder import CrossEncoderReranker
from serving.fusion import WeightedRRF
from serving.graph_ops import GraphOps
from serving.graph_route import GraphRouter
from serving.intent import Intent, IntentClassifier, IntentResult
from serving.late_interaction import LateInteractionReranker, TokenEmbeddingCache
from serving.localize import Localizer
from serving.ltr import LtrReranker
from serving.planning.expand import QueryExpansion
from serving.prefetch import Prefetcher
from serving.query_encoding import QueryEncoder
from serving.rerankers import Reranker, RerankInput, build_rerankers
from serving.retrievers.base import Filters, RetrievalQuery, ScoredList, merge_scored, to_ranked
from serving.retrievers.granular import granular_lists
from serving.retrievers.repo import RepoRetrievers

LATE_CACHE_DIR = "late_tokens"
SNAPSHOT_STAGE = "snapshot"
QUERY_ENCODING_ITEMS = 64
log = logging.getLogger(__name__)


class StageTimer:
    """Wall-clock milliseconds per stage."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self._lock = threading.Lock()  # repositories run their stages in parallel

    def run(self, stage: str, fn: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        try:
            return fn()
        finally:
            with self._lock:
                self.ms[stage] = round(self.ms.get(stage, 0.0) + (time.perf_counter() - start) * 1000, 3)


class SearchPipeline:
    """Answers `SearchRequest`s over the published snapshots under one index root."""

    def __init__(self, config: Config, snapshots: SnapshotSet | None = None,
                 encoder_factory: Callable[[], Encoder] | None = None) -> None:
        self.config = config
        self.snapshots = snapshots or SnapshotSet(config)
        self._encoder_factory = encoder_factory or (lambda: shared_encoder(config.encoder))
        self.intent = IntentClassifier(config.intent)
        for name in config.late_interaction.intents:  # late_interaction.intents: a typo fails here, not silently
            Intent.parse(name)
        self.fusion = WeightedRRF(config.fusion)
        self.context_builder = ContextBuilder(config.context)
        self.localizer = Localizer(config.query, self.fusion, config.granular)
        self._retrievers: dict[str, RepoRetrievers] = {}
        self._cache: OrderedDict[tuple, SearchResponse] = OrderedDict()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=len(Strategy) * max(1, config.retrieval.repo_parallelism),
                                        thread_name_prefix="retrieve")
        self._repo_pool = ThreadPoolExecutor(max_workers=max(1, config.retrieval.repo_parallelism),
                                             thread_name_prefix="repo")
        self.query_encoder = QueryEncoder(self._encoder_factory, QUERY_ENCODING_ITEMS)  # one encoder pass per query
        self._prefetcher = Prefetcher()

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
        return LateInteractionReranker(li, encoder, cache, stored=self._stored_tokens,
                                       query_tokens=self.query_encoder.tokens)

    def _stored_tokens(self, repo: str) -> tuple[StoredTokenVectors, dict[str, int]] | None:
        snapshot = self.snapshots.get(repo)
        store = snapshot.token_vectors
        return (store, snapshot.chunk_row) if store is not None else None

    @cached_property
    def graph_ops(self) -> GraphOps:
        return GraphOps()

    @cached_property
    def expansion(self) -> QueryExpansion:  # issue 15: decomposition + multi-hop (serving/planning/)
        return QueryExpansion(self.config.planning, self.intent.classify, self.graph_ops.graph)

    @cached_property
    def graph_router(self) -> GraphRouter:
        return GraphRouter(self.graph_ops, self.config.graph_ops.route_depth)

    @cached_property
    def cross(self) -> CrossEncoderReranker:
        return CrossEncoderReranker.from_config(self.config.cross_encoder)

    @cached_property
    def ltr(self) -> LtrReranker:
        """Runs where the pipeline runs (also in the Serve ingress): a few trees over <= top_n rows."""
        return LtrReranker.from_config(self.config.ltr)

    def prefetch(self, repos: list[str] | None = None) -> Prefetcher:
        """Start loading, in parallel, what the first query over `repos` (default: all) will need."""
        names = repos or self.snapshots.repos()
        loads: dict[str, Callable[[], Any]] = {"encoder": self._encoder_factory}
        for name in names:
            try:
                snapshot = self.snapshots.get(name)
            except Exception:  # an unknown repository: the query itself reports it
                continue
            retrievers = self.retrievers(snapshot)
            loads[f"{name}:lucene"] = lambda r=retrievers: r.lexical
            loads[f"{name}:faiss"] = lambda r=retrievers: r.vector
            loads[f"{name}:tables"] = lambda r=retrievers, s=snapshot: (r.symbol, s.chunk_row, s.token_vectors, r.graph)
        return self._prefetcher.start(loads)

    # -- validation ----------------------------------------------------------------------------

    def validate(self, request: SearchRequest) -> list[str]:
        """Raise QueryError for a request that cannot be answered; return warnings for fixed ones."""
        warnings: list[str] = []
        if not isinstance(request.query, str) or not request.query.strip():
            raise QueryError("query is empty: pass some text, an identifier or a question")
        if request.k is None:
            request.k = self.config.query.default_k
        if isinstance(request.k, bool) or not isinstance(request.k, int) or request.k <= 0:
            raise QueryError(f"k must be a positive integer, got {request.k!r}")
        if request.k > self.config.query.max_k:
            raise QueryError(f"k={request.k} is above the maximum {self.config.query.max_k}")
        try:
            request.strategies = [Strategy.parse(name).value for name in request.strategies]
        except ValueError as exc:
            raise QueryError(str(exc)) from None
        if isinstance(request.repos, str):
            raise QueryError(f"repos must be a list of repository names, got the string {request.repos!r}")
        request.repos = list(dict.fromkeys(normalize_repo_name(name) for name in request.repos))  # RepoNameError
        request.languages = [_known_language(name) for name in request.languages]
        if len(request.query) > self.config.query.max_query_chars:
            request.query = request.query[: self.config.query.max_query_chars]
            warnings.append(f"query truncated to its first {self.config.query.max_query_chars} characters")
        cleaned = request.query.encode("utf-8", "replace").decode("utf-8")
        if cleaned != request.query:
            request.query = cleaned
            warnings.append("query held invalid characters (lone surrogates); they were replaced")
        return warnings

    def _repos(self, request: SearchRequest, degraded: list[dict[str, str]]) -> list[Snapshot]:
        """The snapshots that can answer; a broken one is skipped and listed in `degraded`
        (UnknownRepoError for a named repository that does not exist)."""
        snapshots, broken = self.snapshots.resolve(request.repos or None)
        if not request.repos:  # other branches (`repo@branch`) only when named
            snapshots = [s for s in snapshots if not split_branch_key(s.repo)[1]]
            broken = [h for h in broken if not split_branch_key(h.repo)[1]]
        degraded.extend({"stage": SNAPSHOT_STAGE, "repo": h.repo, "error": h.error} for h in broken)
        if snapshots:
            return snapshots
        if broken:
            raise BrokenSnapshotError("no asked repository can answer: " +
                                      "; ".join(f"{h.repo!r}: {h.error}" for h in broken))
        raise QueryError("no repository is indexed yet: run `semantica index --repo PATH` first")

    def retrievers(self, snapshot: Snapshot) -> RepoRetrievers:
        with self._lock:
            current = self._retrievers.get(snapshot.repo)
            if current is None or current.snapshot is not snapshot:
                current = self._retrievers[snapshot.repo] = RepoRetrievers(snapshot, self._encoder_factory,
                                                                           self.query_encoder.vector)
            return current

    # -- the work ------------------------------------------------------------------------------

    def search(self, request: SearchRequest) -> SearchResponse:
        timer = StageTimer()
        warnings = timer.run("validate", lambda: self.validate(request))
        degraded: list[dict[str, str]] = []
        snapshots = self._repos(request, degraded)
        key = request.cache_key(tuple(s.snapshot_id for s in snapshots))
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                cached = self._cache[key]
                return SearchResponse(**{**cached.__dict__, "cached": True, "freshness": self.freshness(snapshots)})
        response, _ = self._search(request, snapshots, timer, warnings, degraded)
        if not response.degraded:
            with self._lock:
                self._cache[key] = response
                while len(self._cache) > self.config.query.query_cache_items:
                    self._cache.popitem(last=False)
        return SearchResponse(**{**response.__dict__, "freshness": self.freshness(snapshots)})

    def freshness(self, snapshots: list[Snapshot]) -> dict[str, dict[str, Any]]:
        """Each answer says how fresh its snapshots are (checked now, never cached: a few ms per repository)."""
        if not self.config.freshness.enabled:
            return {}
        return {s.repo: s.freshness().to_dict() for s in snapshots}

    def search_with_lists(self, request: SearchRequest) -> tuple[SearchResponse, dict[Strategy, RankedList]]:
        """One uncached search that also returns each retriever's ranked chunk list: the offline jobs
        that learn or replay the later stages (`semantica mine`) need both from the same pass."""
        timer = StageTimer()
        warnings = timer.run("validate", lambda: self.validate(request))
        degraded: list[dict[str, str]] = []
        return self._search(request, self._repos(request, degraded), timer, warnings, degraded)

    def _search(self, request: SearchRequest, snapshots: list[Snapshot], timer: StageTimer,
                warnings: list[str], degraded: list[dict[str, str]]) -> tuple[SearchResponse, dict[Strategy, RankedList]]:
        intent = timer.run("intent", lambda: self.intent.classify(request.query))
        enabled = {Strategy.parse(s) for s in request.strategies} or set(Strategy)
        filters = Filters(path_globs=list(request.path_globs), languages=list(request.languages))
        lists = self._retrieve(request.query, intent, snapshots, enabled, filters, timer, degraded)
        lists, plan = timer.run("planning", lambda: self.expansion.expand(  # issue 15: decomposition + multi-hop
            request.query, intent, snapshots, enabled, filters, lists,
            lambda text, sub_intent, strategies: self._retrieve(text, sub_intent, snapshots, strategies, filters,
                                                                StageTimer(), degraded)))
        chunks: dict[str, Chunk] = {}
        for snapshot in snapshots:
            chunks.update(snapshot.chunk_by_id)
        depth = max(request.k, self.config.query.file_rank_depth)
        meta = {cid: ChunkMeta.from_chunk(chunks[cid]) for ranked in lists.values() for cid, _ in ranked if cid in chunks}
        fused = timer.run("fusion", lambda: self.fusion.fuse(lists, intent, meta, request.k))  # max(k, intent cutoff)
        hits = self._rerank(request, intent, [h for h in fused if h.chunk_id in chunks], chunks, timer, degraded)
        routed = timer.run("graph_ops", lambda: self.graph_router.answer(request.query, snapshots, warnings)) \
            if self.config.graph_ops.route_queries else None
        if routed is not None:  # the exact answer first; no reranker touches its order
            hits = routed.merge(hits, chunks)
        if "late_interaction" in timer.ms:
            warnings.extend(f"{s.repo}: snapshot {s.snapshot_id} stores no token vectors; late interaction encoded its "
                            f"candidates per query (slow): re-index it" for s in snapshots if not s.manifest.token_vectors)
        granular = None
        if self.config.granular.enabled:
            try:
                granular = timer.run("granular", lambda: granular_lists(
                    request.query, [self.retrievers(s).granular for s in snapshots], self.config.granular, filters))
            except Exception as exc:  # optional lists: localization falls back to the chunk lists
                degraded.append(_degraded("granular", exc))
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
            graph=routed.result.to_dict() if routed is not None else None,
        )
        if plan:  # issue 15: what decomposition / multi-hop did
            response.plan = {**(response.plan or {}), **plan}
        if routed is not None:
            for view in response.hits:
                view.graph = routed.by_chunk.get(view.chunk_id)
        return response, lists

    def _retrieve(self, query: str, intent: IntentResult, snapshots: list[Snapshot], enabled: set[Strategy],
                  filters: Filters, timer: StageTimer, degraded: list[dict[str, str]]) -> dict[Strategy, RankedList]:
        k = self.config.retrieval.k_per_retriever
        scored: dict[Strategy, list[ScoredList]] = {s: [] for s in enabled}

        def attempt(strategy: Strategy, fn: Callable[[], ScoredList]) -> ScoredList:
            try:
                return timer.run(strategy.value, fn)
            except Exception as exc:  # a failing index degrades the answer, it does not fail it
                degraded.append(_degraded(strategy.value, exc))
                return []

        def one_repo(snapshot: Snapshot) -> dict[Strategy, ScoredList]:
            out: dict[Strategy, ScoredList] = {}
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
                out[Strategy.SYMBOL] = symbol_hits
            if Strategy.LEXICAL in enabled:
                out[Strategy.LEXICAL] = lexical_hits
            if Strategy.GRAPH in enabled:
                seeds = _interleave([c for c, _ in symbol_hits], [c for c, _ in lexical_hits])
                graph_query = RetrievalQuery(text=query, intent=intent, seeds=seeds,
                                             symbol_seeds=[c for c, _ in symbol_hits])
                out[Strategy.GRAPH] = attempt(Strategy.GRAPH, lambda: retrievers.graph.search_scored(graph_query, k, filters))
            if vector_future:
                out[Strategy.VECTOR] = vector_future.result()
            return out

        # repositories fan out in parallel (their own pool: a repo task waits on the retriever pool)
        per_repo = (list(self._repo_pool.map(one_repo, snapshots)) if len(snapshots) > 1
                    else [one_repo(s) for s in snapshots])
        for lists in per_repo:
            for strategy, hits in lists.items():
                scored[strategy].append(hits)
        return {s: to_ranked(merge_scored(lists, k)) for s, lists in scored.items()}

    @cached_property
    def rerankers(self) -> list[Reranker]:
        return build_rerankers(self.config.rerank.order, self)

    def _rerank(self, request: SearchRequest, intent: IntentResult, hits: list[Hit], chunks: dict[str, Chunk],
                timer: StageTimer, degraded: list[dict[str, str]]) -> list[Hit]:
        """The registered rerankers in `rerank.order`; an optional one that fails keeps the previous order."""
        given = RerankInput(request, intent, chunks)
        for stage in self.rerankers:
            if not hits or not stage.wanted(given):
                continue
            try:
                hits = timer.run(stage.name, lambda: stage.rerank(hits, given))
            except Exception as exc:
                if not stage.optional:
                    raise
                degraded.append(_degraded(stage.name, exc))
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


def _degraded(stage: str, exc: BaseException) -> dict[str, str]:
    """A `degraded` entry: a short, path-free message for the client; the full one goes to the log."""
    log.warning("stage %s failed; answering without it", stage, exc_info=exc)
    return {"stage": stage, "error": public_message(exc)}


def _known_language(name: str) -> str:
    language = str(name).strip().lower()
    if language not in KNOWN_LANGUAGES:
        raise QueryError(f"unknown language {name!r}; known languages: {', '.join(sorted(KNOWN_LANGUAGES))}")
    return language


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

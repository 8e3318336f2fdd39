"""Proxies for the Ray Serve graph: the pipeline's stage objects, answered by deployments.

`RemotePipeline` is `SearchPipeline` with its stages replaced by handles that satisfy the same
interfaces (classify, fuse, rerank, build, search_scored), so the Serve ingress runs exactly the
in-process orchestration.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ray.serve.handle import DeploymentHandle

from semantica.api import QueryError
from semantica.config import Config
from semantica.hits import Strategy
from semantica.layout import UnknownRepoError
from semantica.snapshot import Snapshot
from serving.cross_encoder import should_run as cross_should_run
from serving.pipeline import SearchPipeline
from serving.retrievers.base import Filters, RetrievalQuery, ScoredList

RETRIEVER_DEPLOYMENTS = {Strategy.VECTOR: "VectorRetriever", Strategy.LEXICAL: "LexicalRetriever",
                         Strategy.SYMBOL: "SymbolRetriever", Strategy.GRAPH: "GraphRetriever"}


class StageUnavailable(RuntimeError):
    """A mandatory stage is down, overloaded or timed out (HTTP 503)."""

    def __init__(self, stage: str, detail: str) -> None:
        super().__init__(f"stage {stage} is unavailable: {detail}")
        self.stage = stage


def _unwrap(exc: BaseException) -> BaseException:
    """The user exception inside a Ray task error (Ray keeps it as `cause` / a dual-class instance)."""
    return getattr(exc, "cause", None) or exc


class _Remote:
    """Calls one method of a deployment and waits (bounded) for the answer."""

    def __init__(self, handle: DeploymentHandle, stage: str, timeout_s: float, mandatory: bool) -> None:
        self.handle, self.stage, self.timeout_s, self.mandatory = handle, stage, timeout_s, mandatory

    def call(self, method: str, *args: Any) -> Any:
        try:
            return getattr(self.handle, method).remote(*args).result(timeout_s=self.timeout_s)
        except Exception as exc:
            inner = _unwrap(exc)
            if isinstance(inner, (QueryError, UnknownRepoError)):
                raise inner from None
            if self.mandatory:
                raise StageUnavailable(self.stage, f"{type(inner).__name__}: {str(inner).splitlines()[0] if str(inner) else ''}") from None
            raise RuntimeError(f"{self.stage}: {type(inner).__name__}: {inner}") from None


class _RemoteIntent(_Remote):
    def classify(self, query: str) -> Any:
        return self.call("classify", query)


class _RemoteFusion(_Remote):
    def fuse(self, lists: Any, intent: Any = None, chunk_meta: Any = None, k: int | None = None,
             multipliers: Any = None) -> Any:  # planning: a search mode's weights
        return self.call("fuse", lists, intent, chunk_meta, k, *([multipliers] if multipliers else []))


class _RemoteReranker(_Remote):
    def rerank(self, query: str, hits: Any, chunks: Any) -> Any:
        wanted = {h.chunk_id for h in hits}  # ship only the chunks the stage can look at
        return self.call("rerank", query, hits, {cid: c for cid, c in chunks.items() if cid in wanted})


class _RemoteCross(_RemoteReranker):
    def __init__(self, handle: DeploymentHandle, config: Config) -> None:
        super().__init__(handle, "CrossEncoder", config.retrieval.timeout_s, mandatory=True)
        self.config = config.cross_encoder

    def should_run(self, query: str, intent: Any) -> bool:
        return cross_should_run(self.config, query, intent)


class _RemoteContext(_Remote):
    def build(self, hits: Any, chunks: Any, file_lines: Callable[[str, str], list[str]] | None = None,
              budget: int | None = None) -> Any:
        wanted = {h.chunk_id: chunks[h.chunk_id] for h in hits if h.chunk_id in chunks}
        files = {(c.repo, c.path) for c in wanted.values()}
        lines = {key: file_lines(*key) for key in files} if file_lines else {}
        return self.call("build", hits, wanted, lines, budget)


class _RemoteRetriever(_Remote):
    def __init__(self, handle: DeploymentHandle, stage: str, timeout_s: float, repo: str) -> None:
        super().__init__(handle, stage, timeout_s, mandatory=False)
        self.repo = repo

    def search_scored(self, query: Any, k: int, filters: Filters | None = None) -> ScoredList:
        return self.call("search", self.repo, RetrievalQuery.of(query), k, filters or Filters())


class _RemoteRepoRetrievers:
    def __init__(self, snapshot: Snapshot, handles: dict[Strategy, DeploymentHandle], timeout_s: float) -> None:
        self.snapshot = snapshot
        for strategy, handle in handles.items():
            setattr(self, strategy.value,
                    _RemoteRetriever(handle, RETRIEVER_DEPLOYMENTS[strategy], timeout_s, snapshot.repo))


class RemotePipeline(SearchPipeline):
    """`SearchPipeline` whose stages are deployments: same orchestration, same response."""

    def __init__(self, config: Config, handles: dict[str, DeploymentHandle]) -> None:
        super().__init__(config)
        timeout = config.retrieval.timeout_s
        self.intent = _RemoteIntent(handles["Intent"], "Intent", timeout, mandatory=True)  # type: ignore[assignment]
        self.fusion = _RemoteFusion(handles["Fusion"], "Fusion", timeout, mandatory=True)  # type: ignore[assignment]
        self.context_builder = _RemoteContext(handles["ContextBuilder"], "ContextBuilder", timeout,  # type: ignore[assignment]
                                              mandatory=True)
        self.__dict__["late"] = _RemoteReranker(handles["LateInteraction"], "LateInteraction", timeout, mandatory=False)
        self.__dict__["cross"] = _RemoteCross(handles["CrossEncoder"], config)
        self._retriever_handles = {s: handles[name] for s, name in RETRIEVER_DEPLOYMENTS.items()}

    def retrievers(self, snapshot: Snapshot) -> Any:
        return _RemoteRepoRetrievers(snapshot, self._retriever_handles, self.config.retrieval.timeout_s)

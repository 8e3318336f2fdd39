"""Proxies for the Ray Serve graph: the pipeline's stages, answered by deployments.

`remote_stages(config, handles)` builds the same `Stages` as the in-process pipeline with each stage object
replaced by a proxy that satisfies its protocol (classify, fuse, build, rerank, search_scored) and calls one
`StageDeployment` through its handle. Every registered retriever in `retrieval.retrievers` and every reranker
in `rerank.order` whose class says `deployed = True` gets its own deployment, named from its registry name.
The Serve ingress runs `SearchPipeline(stages=remote_stages(...))`: exactly the in-process orchestration,
with no subclass and nothing patched.

Each call carries the request (`semantica.runtime.observability.carrier()`: the W3C `traceparent` of the stage's
span and the request id) through `StageDeployment.traced`, so the replica's spans join the request's trace
and its log lines carry the request id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ray.serve.handle import DeploymentHandle

from semantica.config import Config
from semantica.errors import ErrorKind, kind_of
from semantica.runtime import observability
from semantica.snapshot import Snapshot
from serving.rerankers.base import Reranker, RerankInput
from serving.rerankers.registry import deployed_rerankers, registered_rerankers
from serving.retrievers.base import Filters, RetrievalQuery, ScoredList
from serving.retrievers.registry import enabled_specs
from serving.stages import Stages, build_stages

CORE_DEPLOYMENTS = ("Intent", "Fusion", "ContextBuilder")
MANDATORY = CORE_DEPLOYMENTS
RETRIEVER_STAGE = "retriever:"
RERANKER_STAGE = "reranker:"


def retriever_deployment(name: str) -> str:
    """The deployment that serves the registered retriever `name` (vector -> VectorRetriever)."""
    return f"{name[:1].upper()}{name[1:]}Retriever"


def reranker_deployment(name: str) -> str:
    """The deployment that serves the registered reranker `name` (late_interaction -> LateInteraction)."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def known_deployment(name: str) -> bool:
    """Whether conf/serve.yaml may configure a deployment called `name` (any registered plug-in's)."""
    return (name == "Ingress" or name in CORE_DEPLOYMENTS or name.endswith("Retriever")
            or name in {reranker_deployment(n) for n in deployed_rerankers(registered_rerankers())})


def stage_deployments(config: Config) -> dict[str, str]:
    """Deployment name -> the stage it serves (`StageDeployment`'s `stage` argument)."""
    stages = {name: name for name in CORE_DEPLOYMENTS}
    stages.update({retriever_deployment(s.name): f"{RETRIEVER_STAGE}{s.name}"
                   for s in enabled_specs(config.retrieval.retrievers)})
    stages.update({reranker_deployment(n): f"{RERANKER_STAGE}{n}" for n in deployed_rerankers(config.rerank.order)})
    return stages


class StageUnavailable(RuntimeError):
    """A mandatory stage is down, overloaded or timed out (HTTP 503)."""

    error_kind = ErrorKind.UNAVAILABLE

    def __init__(self, stage: str, detail: str) -> None:
        super().__init__(f"stage {stage} is unavailable: {detail}")
        self.stage = stage

    def error_fields(self) -> dict[str, str]:
        return {"stage": self.stage}


def _unwrap(exc: BaseException) -> BaseException:
    """The user exception inside a Ray task error (Ray keeps it as `cause` / a dual-class instance)."""
    return getattr(exc, "cause", None) or exc


class _Remote:
    """Calls one method of a deployment and waits (bounded) for the answer."""

    def __init__(self, handle: DeploymentHandle, stage: str, timeout_s: float, mandatory: bool) -> None:
        self.handle, self.stage, self.timeout_s, self.mandatory = handle, stage, timeout_s, mandatory

    def call(self, method: str, *args: Any) -> Any:
        """`method` of the stage object behind the deployment (`StageDeployment.call`)."""
        return self.invoke("call", method, *args)

    def invoke(self, endpoint: str, *args: Any) -> Any:
        headers = observability.carrier()  # the request's trace and id, for the replica
        try:
            call = self.handle.traced.remote(headers, endpoint, *args) if headers else \
                getattr(self.handle, endpoint).remote(*args)
            return call.result(timeout_s=self.timeout_s)
        except Exception as exc:
            inner = _unwrap(exc)
            if kind_of(inner).caller_error:  # the request's fault (bad query, unknown repository): as it is
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
    """A deployed reranker: `wanted` is asked here (it loads no model), `rerank` runs in its deployment; a
    mandatory one that is down fails the request (503), an optional one degrades it."""

    deployed = True

    def __init__(self, local: Reranker, handle: DeploymentHandle, timeout_s: float) -> None:
        super().__init__(handle, reranker_deployment(local.name), timeout_s, mandatory=not local.optional)
        self.local, self.name, self.optional = local, local.name, local.optional

    def warm_up(self) -> None:
        """Nothing here: its deployment warms the model before taking traffic."""

    def wanted(self, given: RerankInput) -> bool:
        return self.local.wanted(given)

    def rerank(self, hits: Any, given: RerankInput) -> Any:
        return self.invoke("rerank", hits, given.for_hits(hits))  # ship only the chunks the stage can look at


class _RemoteContext(_Remote):
    def build(self, hits: Any, chunks: Any, file_lines: Callable[[str, str], list[str]] | None = None,
              budget: int | None = None) -> Any:
        wanted = {h.chunk_id: chunks[h.chunk_id] for h in hits if h.chunk_id in chunks}
        files = {(c.repo, c.path) for c in wanted.values()}
        lines = {key: file_lines(*key) for key in files} if file_lines else {}
        return self.invoke("build_context", hits, wanted, lines, budget)


class _RemoteRetriever(_Remote):
    def __init__(self, handle: DeploymentHandle, stage: str, timeout_s: float, repo: str) -> None:
        super().__init__(handle, stage, timeout_s, mandatory=False)
        self.repo = repo

    def search_scored(self, query: Any, k: int, filters: Filters | None = None) -> ScoredList:
        return self.invoke("search", self.repo, RetrievalQuery.of(query), k, filters or Filters())


class _RemoteRepoRetrievers:
    """One snapshot's retrievers by name, each answered by its deployment."""

    def __init__(self, snapshot: Snapshot, handles: dict[str, DeploymentHandle], timeout_s: float) -> None:
        self.snapshot = snapshot
        self._retrievers = {name: _RemoteRetriever(handle, retriever_deployment(name), timeout_s, snapshot.repo)
                            for name, handle in handles.items()}

    def get(self, name: str) -> _RemoteRetriever:
        return self._retrievers[name]


def remote_stages(config: Config, handles: dict[str, DeploymentHandle]) -> Stages:
    """`build_stages(config)` with every stage that has a deployment answered through its handle."""
    timeout = config.retrieval.timeout_s
    retriever_handles = {s.name: handles[retriever_deployment(s.name)] for s in enabled_specs(config.retrieval.retrievers)}
    return build_stages(
        config,
        intent=_RemoteIntent(handles["Intent"], "Intent", timeout, mandatory=True),
        fusion=_RemoteFusion(handles["Fusion"], "Fusion", timeout, mandatory=True),
        context=_RemoteContext(handles["ContextBuilder"], "ContextBuilder", timeout, mandatory=True),
        retrievers=lambda snapshot: _RemoteRepoRetrievers(snapshot, retriever_handles, timeout),
        reranker_proxy=lambda local: _RemoteReranker(local, handles[reranker_deployment(local.name)], timeout),
    )

"""The Ray Serve query graph: each stage of `serving.pipeline` in its own deployment, behind FastAPI.

    Ingress (FastAPI: /v1/search /v1/feedback /v1/repos /healthz /docs)
      -> Intent -> VectorRetriever | LexicalRetriever | SymbolRetriever (concurrently) -> GraphRetriever
      -> Fusion -> LateInteraction -> CrossEncoder (conditional) -> ContextBuilder

The ingress runs the in-process `SearchPipeline` orchestration unchanged (validation, the concurrent
retriever fan-out, degraded handling, localisation, views, the response cache); only its stage objects are
swapped for thin proxies that call the stage deployments through `DeploymentHandle`s. Every deployment
wraps the same stage class the in-process pipeline uses, so no query logic lives here. Each deployment
takes its replicas / autoscaling / `ray_actor_options` from conf/serve.yaml.

Errors are JSON: 422 (FastAPI validation, bad JSON), 400 (`QueryError`), 404 (unknown repository),
503 (a mandatory stage - intent, fusion, context, cross-encoder when asked for - is down or timed out).
A failing retriever or late-interaction stage gives a partial answer listing it in `degraded`.
New snapshots are picked up without restart (`SnapshotSet` re-resolves CURRENT on every request).

Run: `semantica serve` (blocks until SIGINT/SIGTERM), or `serve run conf/serve.yaml`.
"""


import datetime as dt
import json
import os
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from ray import serve
from ray.serve.handle import DeploymentHandle

from semantica.config import Config, config_from_dict, config_to_dict, load_config
from semantica.hits import Strategy
from semantica.layout import IndexLayout, LayoutError, UnknownRepoError
from semantica.snapshot import Snapshot
from serving.context import ContextBuilder
from serving.cross_encoder import should_run as cross_should_run
from serving.fusion import WeightedRRF
from serving.intent import IntentClassifier
from serving.pipeline import QueryError, SearchPipeline, SearchRequest
from serving.retrievers.base import Filters, RetrievalQuery, ScoredList

APP_NAME = "semantica"
DEFAULT_SERVE_CONFIG = Path(__file__).resolve().parent.parent / "conf" / "serve.yaml"
RETRIEVER_DEPLOYMENTS = {
    Strategy.VECTOR: "VectorRetriever", Strategy.LEXICAL: "LexicalRetriever",
    Strategy.SYMBOL: "SymbolRetriever", Strategy.GRAPH: "GraphRetriever",
}
DEPLOYMENTS = ("Ingress", "Intent", *RETRIEVER_DEPLOYMENTS.values(), "Fusion", "LateInteraction", "CrossEncoder",
               "ContextBuilder")
MANDATORY = ("Intent", "Fusion", "ContextBuilder")
FEEDBACK_FILE = "feedback-{date}.jsonl"


class StageUnavailable(RuntimeError):
    """A mandatory stage is down, overloaded or timed out (HTTP 503)."""

    def __init__(self, stage: str, detail: str) -> None:
        super().__init__(f"stage {stage} is unavailable: {detail}")
        self.stage = stage


def error_status(exc: BaseException) -> int:
    """HTTP status of an exception raised while answering (the one mapping, used by the handlers)."""
    if isinstance(exc, QueryError):
        return 400
    if isinstance(exc, UnknownRepoError):
        return 404
    if isinstance(exc, StageUnavailable):
        return 503
    return 500


def error_body(exc: BaseException) -> dict[str, Any]:
    body: dict[str, Any] = {"error": type(exc).__name__, "message": str(exc).splitlines()[0] if str(exc) else ""}
    if isinstance(exc, StageUnavailable):
        body["stage"] = exc.stage
    return body


# -- stage deployments (each wraps one stage class) ---------------------------------------------


def _unwrap(exc: BaseException) -> BaseException:
    """The user exception inside a Ray task error (Ray keeps it as `cause` / a dual-class instance)."""
    return getattr(exc, "cause", None) or exc


@serve.deployment(name="Intent")
class IntentDeployment:
    def __init__(self, config: dict[str, Any]) -> None:
        self.stage = IntentClassifier(config_from_dict(config).intent)

    def classify(self, query: str) -> Any:
        return self.stage.classify(query)

    def ping(self) -> str:
        return "ok"


WARM_UP_QUERY = "warm up"


@serve.deployment(name="Retriever")
class RetrieverDeployment:
    """One strategy over every repository's current snapshot (`RepoRetrievers`, cached per snapshot)."""

    def __init__(self, config: dict[str, Any], strategy: str) -> None:
        self.config = config_from_dict(config)
        self.strategy = Strategy.parse(strategy)
        self.pipeline = SearchPipeline(self.config)
        self.warm_up()

    def warm_up(self) -> None:
        """Open every current snapshot and run one probe search before the replica takes traffic:
        loading the model, the JVM and the shards inside a first request would outlast its timeout."""
        for repo in self.pipeline.snapshots.repos():
            try:
                self._retriever(self.pipeline.snapshots.get(repo)).search_scored(WARM_UP_QUERY, 1)
            except Exception:  # a broken snapshot is reported by the request that needs it
                continue

    def _retriever(self, snapshot: Snapshot) -> Any:
        """The graph store (embedded CSR or Memgraph) is chosen by `Snapshot.graph_store` from conf."""
        return getattr(self.pipeline.retrievers(snapshot), self.strategy.value)

    def search(self, repo: str, query: RetrievalQuery, k: int, filters: Filters) -> ScoredList:
        snapshot = self.pipeline.snapshots.get(repo)
        return self._retriever(snapshot).search_scored(query, k, filters)

    def ping(self) -> str:
        return "ok"


@serve.deployment(name="Fusion")
class FusionDeployment:
    def __init__(self, config: dict[str, Any]) -> None:
        self.stage = WeightedRRF(config_from_dict(config).fusion)

    def fuse(self, lists: Any, intent: Any, meta: Any, k: int | None) -> Any:
        return self.stage.fuse(lists, intent, meta, k)

    def ping(self) -> str:
        return "ok"


@serve.deployment(name="LateInteraction")
class LateInteractionDeployment:
    def __init__(self, config: dict[str, Any]) -> None:
        self.pipeline = SearchPipeline(config_from_dict(config))  # builds the reranker exactly as in-process
        if self.pipeline.config.late_interaction.enabled:
            self.pipeline.late.encoder.encode_query(WARM_UP_QUERY)  # load the model before taking traffic

    def rerank(self, query: str, hits: Any, chunks: Any) -> Any:
        return self.pipeline.late.rerank(query, hits, chunks)

    def ping(self) -> str:
        return "ok"


@serve.deployment(name="CrossEncoder")
class CrossEncoderDeployment:
    def __init__(self, config: dict[str, Any]) -> None:
        self.pipeline = SearchPipeline(config_from_dict(config))  # model loaded on first use (may be absent)

    def rerank(self, query: str, hits: Any, chunks: Any) -> Any:
        return self.pipeline.cross.rerank(query, hits, chunks)

    def ping(self) -> str:
        return "ok"


@serve.deployment(name="ContextBuilder")
class ContextDeployment:
    def __init__(self, config: dict[str, Any]) -> None:
        self.stage = ContextBuilder(config_from_dict(config).context)

    def build(self, hits: Any, chunks: Any, lines: dict[tuple[str, str], list[str]], budget: int | None) -> Any:
        return self.stage.build(hits, chunks, lambda repo, path: lines.get((repo, path), []), budget)

    def ping(self) -> str:
        return "ok"


# -- proxies: the pipeline's stage objects, answered by deployments ----------------------------


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
    def fuse(self, lists: Any, intent: Any = None, chunk_meta: Any = None, k: int | None = None) -> Any:
        return self.call("fuse", lists, intent, chunk_meta, k)


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


# -- the HTTP API --------------------------------------------------------------------------------


class SearchBody(BaseModel):
    """`POST /v1/search`."""

    model_config = ConfigDict(extra="forbid")
    query: str = Field(description="an identifier, a question, a stack trace ...")
    repos: list[str] = Field(default_factory=list, description="empty = every indexed repository")
    k: int | None = Field(default=None, description="number of hits (default query.default_k)")
    path_globs: list[str] = Field(default_factory=list)
    languages: list[str] = Field(default_factory=list)
    explain: bool = False
    context_budget: int | None = Field(default=None, ge=0)
    strategies: list[str] = Field(default_factory=list, description="subset of vector, lexical, symbol, graph")
    late_interaction: bool | None = None
    cross_encoder: bool | None = None
    ltr: bool | None = Field(default=None, description="rerank with the trained LTR model (default: ltr.enabled)")


class FeedbackBody(BaseModel):
    """`POST /v1/feedback`: which hits of a query were useful."""

    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1)
    chunk_ids: list[str] = Field(default_factory=list, description="selected chunk ids")
    hits: list[dict[str, Any]] = Field(default_factory=list, description="selected hits as returned by /v1/search")
    repos: list[str] = Field(default_factory=list)
    snapshots: dict[str, str] = Field(default_factory=dict)
    rating: float | None = None
    comment: str | None = None


class FeedbackLog:
    """Append-only JSONL, one file per UTC day, each record fsync'ed before the request returns."""

    def __init__(self, directory: str) -> None:
        self.directory = Path(directory)
        self._lock = threading.Lock()

    def append(self, record: dict[str, Any]) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        now = dt.datetime.now(dt.UTC)
        path = self.directory / FEEDBACK_FILE.format(date=now.strftime("%Y%m%d"))
        line = (json.dumps({"id": uuid.uuid4().hex, "ts": now.isoformat(timespec="milliseconds"), **record},
                           ensure_ascii=False, default=str) + "\n").encode()
        with self._lock:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)  # one write on an O_APPEND fd: replicas never interleave records
                os.fsync(fd)
            finally:
                os.close(fd)
        return path


class IngressCore:
    """The ingress logic (no HTTP): owns the orchestration, a `RemotePipeline` over the stage handles."""

    def __init__(self, config: dict[str, Any], **handles: DeploymentHandle) -> None:
        self.config = config_from_dict(config)
        self.handles = handles
        self.pipeline = RemotePipeline(self.config, handles)
        if self.config.ltr.enabled:
            _ = self.pipeline.ltr  # load the model before taking traffic: a bad model path fails the deploy
        self.feedback_log = FeedbackLog(self.config.serve.feedback_dir)
        self.layout = IndexLayout(self.config.paths.index_root)

    def search(self, payload: dict[str, Any]) -> dict[str, Any]:
        body = SearchBody.model_validate(payload)
        values = body.model_dump()
        values["k"] = self.config.query.default_k if body.k is None else body.k
        return self.pipeline.search(SearchRequest(**values)).to_dict()

    def feedback(self, payload: dict[str, Any]) -> dict[str, Any]:
        body = FeedbackBody.model_validate(payload)
        if not body.chunk_ids and not body.hits:
            raise QueryError("feedback needs at least one selected chunk id (chunk_ids) or hit (hits)")
        path = self.feedback_log.append(body.model_dump())
        return {"stored": True, "file": path.name}

    def repos(self) -> list[dict[str, Any]]:
        return [{"repo": m.repo, "snapshot": m.snapshot_id, "commit": m.commit, "created": m.created,
                 "counts": m.counts, "model": m.model_id,
                 "freshness": self.pipeline.snapshots.get(m.repo).freshness().to_dict()} for m in self.layout.manifests()]

    def health(self) -> dict[str, Any]:
        stages: dict[str, str] = {}
        for name, handle in self.handles.items():
            try:
                stages[name] = handle.ping.remote().result(timeout_s=self.config.retrieval.timeout_s)
            except Exception as exc:
                stages[name] = f"down: {type(_unwrap(exc)).__name__}"
        down = [n for n in MANDATORY if stages.get(n) != "ok"]
        return {"status": "ok" if not down else "unavailable", "down": down, "stages": stages,
                "repos": self.layout.repos()}


def make_ingress() -> Any:
    """A fresh FastAPI app and Ingress deployment (a FastAPI app cannot be pickled once it has served)."""
    api = FastAPI(title="Semantica", version="1", description="Hybrid code search: dense + BM25 + symbols + code "
                  "graph, fused, reranked, with a cited context. Errors are JSON {error, message}.")

    async def mapped_error(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(error_body(exc), status_code=error_status(exc))

    for kind in (QueryError, UnknownRepoError, StageUnavailable, LayoutError):
        api.add_exception_handler(kind, mapped_error)

    @serve.deployment(name="Ingress")
    @serve.ingress(api)
    class Ingress(IngressCore):
        """HTTP routes (sync: FastAPI runs them in its thread pool, where blocking on handles is fine)."""

        @api.post("/v1/search")
        def http_search(self, body: SearchBody) -> JSONResponse:
            return JSONResponse(self.search(body.model_dump(exclude_unset=True)))

        @api.post("/v1/feedback", status_code=201)
        def http_feedback(self, body: FeedbackBody) -> JSONResponse:
            return JSONResponse(self.feedback(body.model_dump()), status_code=201)

        @api.get("/v1/repos")
        def http_repos(self) -> JSONResponse:
            return JSONResponse(self.repos())

        @api.get("/healthz")
        def http_health(self) -> JSONResponse:
            report = self.health()
            return JSONResponse(report, status_code=200 if report["status"] == "ok" else 503)

    return Ingress


# -- building the application --------------------------------------------------------------------


def deployment_options(serve_config: str | Path | None) -> dict[str, dict[str, Any]]:
    """Per-deployment options (num_replicas, autoscaling_config, ray_actor_options, ...) from serve.yaml."""
    path = Path(serve_config) if serve_config else DEFAULT_SERVE_CONFIG
    if not path.exists():
        return {}
    raw = yaml.safe_load(path.read_text()) or {}
    apps = raw.get("applications") or [{}]
    app = next((a for a in apps if a.get("name") == APP_NAME), apps[0])
    options: dict[str, dict[str, Any]] = {}
    for item in app.get("deployments", []) or []:
        values = dict(item)
        name = values.pop("name")
        if name not in DEPLOYMENTS:
            raise ValueError(f"{path}: unknown deployment {name!r}; known: {list(DEPLOYMENTS)}")
        options[name] = values
    return options


def build_graph(config: Config, options: dict[str, dict[str, Any]] | None = None,
                overrides: dict[str, Any] | None = None) -> serve.Application:
    """Bind every deployment; `overrides` swaps a deployment class (tests inject failing stages)."""
    options = options or {}
    overrides = overrides or {}
    values = config_to_dict(config)

    def make(name: str, default: Any) -> Any:
        deployment = overrides.get(name, default)
        return deployment.options(name=name, **options.get(name, {}))

    handles: dict[str, Any] = {
        "Intent": make("Intent", IntentDeployment).bind(values),
        "Fusion": make("Fusion", FusionDeployment).bind(values),
        "LateInteraction": make("LateInteraction", LateInteractionDeployment).bind(values),
        "CrossEncoder": make("CrossEncoder", CrossEncoderDeployment).bind(values),
        "ContextBuilder": make("ContextBuilder", ContextDeployment).bind(values),
    }
    for strategy, name in RETRIEVER_DEPLOYMENTS.items():
        handles[name] = make(name, RetrieverDeployment).bind(values, strategy.value)
    return make("Ingress", make_ingress()).bind(values, **handles)


def build_app(args: dict[str, Any] | None = None) -> serve.Application:
    """Application builder for `serve run conf/serve.yaml` (import_path `serving.app:build_app`).

    args: config (YAML path), index_root, overrides (list of section.field=value), serve_config.
    """
    args = dict(args or {})
    overrides = list(args.get("overrides") or [])
    if args.get("index_root"):
        overrides.append(f"paths.index_root={args['index_root']}")
    config = load_config(args.get("config") or None, overrides)
    return build_graph(config, deployment_options(args.get("serve_config")))

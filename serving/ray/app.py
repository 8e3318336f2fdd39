"""The Ray Serve query graph: each stage of `serving.pipeline` in its own deployment, behind FastAPI.

    Ingress (FastAPI: /v1/search /v1/feedback /v1/repos /healthz /docs)
      -> Intent -> VectorRetriever | LexicalRetriever | SymbolRetriever (concurrently) -> GraphRetriever
      -> Fusion -> LateInteraction -> CrossEncoder (conditional) -> ContextBuilder
      (a deployment per registered retriever, and per reranker in `rerank.order` that says `deployed = True`)

The ingress runs the in-process `SearchPipeline` orchestration unchanged (validation, the concurrent
retriever fan-out, degraded handling, localisation, views, the response cache) over
`serving.ray.remote.remote_stages`: the stages `build_stages` makes, with proxies that call the deployments
through `DeploymentHandle`s. Every deployment is one generic `StageDeployment` serving one stage of that
same `build_stages(config)`, so no query logic lives here; a registered retriever gets its own
`<Name>Retriever` deployment and a deployed reranker its own `<Name>` one (late_interaction -> LateInteraction),
which loads the reranker's model (`warm_up`) before taking traffic. Each deployment takes its replicas /
autoscaling / `ray_actor_options` from conf/serve.yaml.

Errors are JSON with the status of their kind (`semantica.errors.ErrorKind`, docs/errors.md): 422
(validation), 400 (`QueryError`), 404 (unknown repository), 503 (a mandatory stage - intent, fusion,
context, cross-encoder when asked for - is down or timed out).
A failing retriever or late-interaction stage gives a partial answer listing it in `degraded`.
New snapshots are picked up without restart (`SnapshotSet` re-resolves CURRENT on every request).

Run: `semantica serve` (blocks until SIGINT/SIGTERM), or `serve run conf/serve.yaml`.
"""


import datetime as dt
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel
from ray import serve
from ray.serve.handle import DeploymentHandle

from semantica.api import SearchRequest
from semantica.config import Config, ConfigError, config_from_dict, config_to_dict, load_config
from semantica.layout import IndexLayout
from semantica.ondisk.branch_keys import split_branch_key
from semantica.ondisk.build_stats import build_stats_path, read_build_stats
from semantica.runtime import observability
from semantica.snapshot import RepoHealth
from serving.api.http.admission import AdmissionController
from serving.api.http.errors import NotFound
from serving.api.http.feedback import FeedbackLog
from serving.api.http.metrics import HttpMetrics
from serving.api.http.models import FeedbackBody, GraphBody, GrepBody, SearchBody
from serving.api.http.routes import ROUTES, build_http_app
from serving.api.http.security import ANONYMOUS, HostAllowlist, Principal, TokenStore, auth_required
from serving.api.request import RequestBuilder
from serving.graph.service import GraphRequest, GraphService
from serving.pipeline import SearchPipeline
from serving.ray.health import SnapshotHealthCheck
from serving.ray.remote import (  # noqa: F401 (StageUnavailable: re-exported, callers import it from here)
    CORE_DEPLOYMENTS,
    MANDATORY,
    RERANKER_STAGE,
    RETRIEVER_STAGE,
    StageUnavailable,
    _unwrap,
    known_deployment,
    remote_stages,
    reranker_deployment,
    retriever_deployment,
    stage_deployments,
)
from serving.rerankers.base import WARM_UP_TEXT, RerankInput
from serving.retrievers.base import Filters, RetrievalQuery, ScoredList
from serving.stages import build_stages

APP_NAME = "semantica"
DEFAULT_SERVE_CONFIG = Path(__file__).resolve().parents[2] / "conf" / "serve.yaml"  # from serving/ray/app.py


# -- the stage deployment (one generic class; each deployment serves one stage) ------------------

@serve.deployment(name="Stage")
class StageDeployment:
    """One stage of `build_stages(config)` behind Ray Serve: `stage` is a core stage name
    (`serving.ray.remote.CORE_DEPLOYMENTS`), `retriever:<name>` or `reranker:<name>`; the proxies in
    `serving.ray.remote` call it."""

    TARGETS = {"Intent": "intent", "Fusion": "fusion", "ContextBuilder": "context_builder"}
    ENDPOINTS = ("call", "search", "build_context", "rerank")

    def __init__(self, config: dict[str, Any], stage: str) -> None:
        self.stages = build_stages(config_from_dict(config))
        observability.configure(self.stages.config.observability)  # this replica's spans and JSON logs
        self.stage = stage
        self.retriever = stage[len(RETRIEVER_STAGE):] if stage.startswith(RETRIEVER_STAGE) else ""
        self.reranker = stage[len(RERANKER_STAGE):] if stage.startswith(RERANKER_STAGE) else ""
        if not self.retriever and not self.reranker and stage not in self.TARGETS:
            raise ValueError(f"unknown stage {stage!r}; known: {sorted(self.TARGETS)}, {RETRIEVER_STAGE}<name> "
                             f"or {RERANKER_STAGE}<name>")
        self.health_check = SnapshotHealthCheck(self.stages.snapshots, self.stages.config.serve.snapshot_max_age_s)
        self.warm_up()

    def check_health(self) -> None:
        """Serve's periodic replica check: raises (the replica is replaced) when a snapshot is unreadable or too old."""
        self.health_check.check()

    def warm_up(self) -> None:
        """Load what the first request needs before the replica takes traffic: the model, the JVM and the
        shards inside a first request would outlast its timeout."""
        if self.retriever:
            for repo in self.stages.snapshots.repos():
                try:
                    self.search(repo, RetrievalQuery.of(WARM_UP_TEXT), 1, Filters())
                except Exception:  # a broken snapshot is reported by the request that needs it
                    continue
        elif self.reranker:
            self.stages.reranker(self.reranker).warm_up()

    def traced(self, headers: dict[str, str], endpoint: str, *args: Any) -> Any:
        """`endpoint(*args)` inside the caller's request (`serving.ray.remote` sends `observability.carrier()`):
        a span `serve <Deployment>.<endpoint>` under the ingress's stage span, the request id in the logs."""
        if endpoint not in self.ENDPOINTS:
            raise ValueError(f"unknown endpoint {endpoint!r}; known: {', '.join(self.ENDPOINTS)}")
        deployment = (retriever_deployment(self.retriever) if self.retriever
                      else reranker_deployment(self.reranker) if self.reranker else self.stage)
        with observability.joined(headers, f"serve {deployment}.{endpoint}", **{"semantica.stage": self.stage}):
            return getattr(self, endpoint)(*args)

    def call(self, method: str, *args: Any) -> Any:
        """`method` of this deployment's stage object (classify, fuse)."""
        return getattr(getattr(self.stages, self.TARGETS[self.stage]), method)(*args)

    def search(self, repo: str, query: RetrievalQuery, k: int, filters: Filters) -> ScoredList:
        """A retriever stage over `repo`'s current snapshot (the graph store is chosen by conf)."""
        snapshot = self.stages.snapshots.get(repo)
        return self.stages.retrievers(snapshot).get(self.retriever).search_scored(query, k, filters)

    def rerank(self, hits: Any, given: RerankInput) -> Any:
        """A reranker stage: its model lives in this replica."""
        return self.stages.reranker(self.reranker).rerank(hits, given)

    def build_context(self, hits: Any, chunks: Any, lines: dict[tuple[str, str], list[str]],
                      budget: int | None) -> Any:
        """The context stage: file lines travel with the request (the ingress reads the snapshot)."""
        return self.stages.context_builder.build(hits, chunks, lambda repo, path: lines.get((repo, path), []), budget)

    def ping(self) -> str:
        return "ok"


# -- the HTTP API --------------------------------------------------------------------------------


class IngressCore:
    """The ingress logic (no HTTP): owns the orchestration, a `SearchPipeline` over `remote_stages` (the stage handles), and
    what the HTTP guards need (tokens, Host allowlist, admission, metrics). Every read is scoped to the
    caller's `Principal`; Serve handle callers (inside the cluster) are trusted as `ANONYMOUS`."""

    def __init__(self, config: dict[str, Any], **handles: DeploymentHandle) -> None:
        self.config = config_from_dict(config)
        self.handles = handles
        self.pipeline = SearchPipeline(self.config, stages=remote_stages(self.config, handles))
        for stage in self.pipeline.rerankers:  # those that run here load their models before taking traffic
            stage.warm_up()
        dense = self.pipeline.learned_localizer.dense  # the localizer stage runs here: its dense channel's model too
        if dense is not None and self.config.localizer.enabled:
            dense.warm_up()
        self.feedback_log = FeedbackLog(self.config.serve.feedback_dir)
        self.layout = IndexLayout(self.config.paths.index_root)
        self.hosts = HostAllowlist.of(self.config.auth, self.config.serve.host)
        self.tokens = self._tokens()
        self.admission = AdmissionController(self.config.admission)
        self.metrics = HttpMetrics(self.config.metrics, ROUTES, self.repo_status,
                                   lambda: read_build_stats(build_stats_path(self.config)))
        self.health_check = SnapshotHealthCheck(self.pipeline.snapshots, self.config.serve.snapshot_max_age_s)
        self.requests = RequestBuilder(self.pipeline.snapshots)

    def check_health(self) -> None:
        """Serve's periodic replica check (see `StageDeployment.check_health`)."""
        self.health_check.check()

    def _tokens(self) -> TokenStore | None:
        """None when auth is off (loopback, mode auto); a deploy without any token fails closed."""
        if not auth_required(self.config.auth, self.config.serve.host):
            return None
        store = TokenStore.load(self.config.auth)
        if not store.tokens:
            raise ConfigError(f"auth is required (host {self.config.serve.host}, auth.mode={self.config.auth.mode}) "
                              f"but no token exists in auth.token_file={self.config.auth.token_file}: "
                              "`semantica serve` creates it")
        return store

    def visible_repos(self, principal: Principal, branch: str = "") -> list[str]:
        """The published names this caller may read at `branch` (default: the default branch, what a request that
        names no branch reads)."""
        return [r for r in principal.visible(self.layout.repos()) if split_branch_key(r)[1] == branch]

    def readable_scope(self, principal: Principal, repos: list[str]) -> list[str]:
        """The published names `principal` reads for a request naming `repos` (none: every one it may read).
        Defence in depth behind `BodyGuard`: a restricted caller names only repositories it may read."""
        if principal.unrestricted:
            return repos
        for name in repos:
            if not principal.may_read(name):
                raise NotFound(f"repository {name!r} has no published snapshot (or this token may not read it)")
        visible = repos or self.visible_repos(principal)
        if not visible:
            raise NotFound("no indexed repository is readable with this token")
        return visible

    def _build(self, request_type: type[Any], body: BaseModel, principal: Principal) -> Any:
        """The body's fields (`branch` aside) as the one request every front builds, scoped to `principal`."""
        values = body.model_dump()
        branch = values.pop("branch", None)
        return self.requests.build(request_type, values, branch, lambda repos: self.readable_scope(principal, repos))

    def search(self, body: SearchBody | dict[str, Any], principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """`POST /v1/search` (the route passes its validated body; a Serve handle caller, a dict)."""
        request = self._build(SearchRequest, _validated(SearchBody, body), principal)
        return self.pipeline.search(request).to_dict()

    def grep(self, body: GrepBody | dict[str, Any], principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """`POST /v1/grep`: exact or regex search, read in the ingress from the snapshots' exact shards; the same
        branch resolution and repository scope as a search."""
        from serving.retrievers.exact import ExactSearcher, GrepRequest

        request = self._build(GrepRequest, _validated(GrepBody, body), principal)
        return ExactSearcher(self.config, self.pipeline.snapshots).search(request).to_dict()

    def graph(self, body: GraphBody | dict[str, Any], principal: Principal = ANONYMOUS) -> dict[str, Any]:
        """`POST /v1/graph`: the exact structural answer, read in the ingress from the snapshot's graph tables."""
        request = self._build(GraphRequest, _validated(GraphBody, body), principal)
        return GraphService(self.config, self.pipeline.snapshots, self.pipeline.graph_ops).run(request)

    def feedback(self, body: FeedbackBody | dict[str, Any], principal: Principal = ANONYMOUS) -> dict[str, Any]:
        body = _validated(FeedbackBody, body)
        record = body.model_dump()
        record["repos"] = self.readable_scope(principal, record["repos"])
        for hit in record["hits"]:
            if "repo" in hit:
                self.readable_scope(principal, [str(hit["repo"])])
        self.readable_scope(principal, list(record["snapshots"]))  # repository -> snapshot id: the same scope
        path = self.feedback_log.append(record)
        moved = self.pipeline.knowledge.feedback(  # a scoped token votes only in its repositories' stores
            body.knowledge_ids, body.rating, None if principal.unrestricted else record["repos"],
            voter=f"token:{principal.name}", include_global=principal.unrestricted)
        return {"stored": True, "file": path.name, "knowledge_moved": moved}

    def repo_status(self, principal: Principal = ANONYMOUS) -> list[dict[str, Any]]:
        """One row per visible repository (`IndexLayout.listing`): its snapshot and age, or the error that
        keeps it from opening (status "broken"); one broken snapshot is never fatal to the listing."""
        now = dt.datetime.now(dt.UTC)
        rows: list[dict[str, Any]] = []
        for entry in self.pipeline.snapshots.checked_listing():
            if not principal.may_read(entry.repo):
                continue
            row = entry.to_dict()
            if entry.manifest is not None:
                row["freshness"] = self.pipeline.snapshots.freshness_of(entry.repo)  # never fails the listing
                created = dt.datetime.fromisoformat(entry.manifest.created)
                created = created if created.tzinfo else created.replace(tzinfo=dt.UTC)
                row["age_s"] = round((now - created).total_seconds(), 1)
            rows.append(row)
        return rows

    def repos(self, principal: Principal = ANONYMOUS) -> list[dict[str, Any]]:
        return self.repo_status(principal)

    def health(self, principal: Principal | None = ANONYMOUS) -> dict[str, Any]:
        """`ok`, `degraded` (some repository cannot be served), `unavailable` (a mandatory stage is down) or
        `draining` (SIGTERM: load balancers take the replica out; 503 like unavailable).
        An unauthenticated probe gets the status only; a token sees its repositories' status too."""
        stages: dict[str, str] = {}
        for name, handle in self.handles.items():
            try:
                stages[name] = handle.ping.remote().result(timeout_s=self.config.retrieval.timeout_s)
            except Exception as exc:
                stages[name] = f"down: {type(_unwrap(exc)).__name__}"
        down = [n for n in MANDATORY if stages.get(n) != "ok"]
        viewer = principal or Principal("probe", ())
        repos = [RepoHealth.of(entry).to_dict() for entry in self.pipeline.snapshots.checked_listing()
                 if viewer.may_read(entry.repo)]
        broken = [r["repo"] for r in repos if r["status"] != "ok"]
        status = "draining" if self.admission.draining else "unavailable" if down else "degraded" if broken else "ok"
        if principal is None or not principal.repos:
            return {"status": status, "down": down}
        return {"status": status, "down": down, "stages": stages, "repos": repos, "broken": broken,
                "admission": self.admission.snapshot()}


Body = TypeVar("Body", bound=BaseModel)


def _validated(model: type[Body], body: Body | dict[str, Any]) -> Body:
    """The route's body as it is (validated once, by the route); a Serve handle caller's dict validated here."""
    return body if isinstance(body, model) else model.model_validate(body)


def make_ingress() -> Any:
    """The Ingress deployment; each replica builds its own FastAPI app (`serving.api.http.routes`) after `__init__`,
    so the app, its guards and its metrics belong to that replica."""

    @serve.deployment(name="Ingress")
    @serve.ingress()
    class Ingress(IngressCore):
        def __serve_build_asgi_app__(self) -> Any:
            return ingress_app(self, behind_proxy=True)  # Serve's proxy owns X-Request-ID

        async def drain(self, timeout_s: float | None = None) -> dict[str, Any]:
            """SIGTERM: refuse new requests (503), wait for the in-flight ones up to the drain timeout, then
            answer those still running 503 `drain_timeout` (`AdmissionController.drain`)."""
            limit = self.config.admission.drain_timeout_s if timeout_s is None else timeout_s
            return await self.admission.drain(limit)

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
        if not known_deployment(name):
            raise ValueError(f"{path}: unknown deployment {name!r}; known: Ingress, {', '.join(CORE_DEPLOYMENTS)}, "
                             "<Name>Retriever for a registered retriever or <Name> for a deployed reranker")
        options[name] = values
    return options


def stage_bindings(config: Config, options: dict[str, dict[str, Any]] | None = None,
                   overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every stage deployment bound to its arguments (no ingress); `overrides` swaps a deployment class."""
    options = options or {}
    overrides = overrides or {}
    values = config_to_dict(config)
    return {name: overrides.get(name, StageDeployment).options(name=name, **options.get(name, {})).bind(values, stage)
            for name, stage in stage_deployments(config).items()}


def build_graph(config: Config, options: dict[str, dict[str, Any]] | None = None,
                overrides: dict[str, Any] | None = None) -> serve.Application:
    """Bind every deployment; `overrides` swaps a deployment class (tests inject failing stages)."""
    options = options or {}
    ingress = (overrides or {}).get("Ingress", make_ingress())
    handles = stage_bindings(config, options, overrides)
    return ingress.options(name="Ingress", **options.get("Ingress", {})).bind(config_to_dict(config), **handles)


def ingress_app(core: IngressCore, behind_proxy: bool = False) -> Any:
    """The FastAPI app over one ingress core (what every Serve ingress replica serves, `behind_proxy`)."""
    return build_http_app(core, behind_proxy)


def build_app(args: dict[str, Any] | None = None) -> serve.Application:
    """Application builder for `serve run conf/serve.yaml` (import_path `serving.ray.app:build_app`).

    args: config (YAML path), index_root, overrides (list of section.field=value), serve_config.
    """
    args = dict(args or {})
    overrides = list(args.get("overrides") or [])
    if args.get("index_root"):
        overrides.append(f"paths.index_root={args['index_root']}")
    config = load_config(args.get("config") or None, overrides)
    config.serve.host = http_host(args.get("serve_config")) or config.serve.host  # auth follows the real bind
    return build_graph(config, deployment_options(args.get("serve_config")))


def http_host(serve_config: str | Path | None) -> str:
    """`http_options.host` of serve.yaml: the address `serve run` binds, which decides whether auth is on."""
    path = Path(serve_config) if serve_config else DEFAULT_SERVE_CONFIG
    raw = yaml.safe_load(path.read_text()) if path.exists() else {}
    return str(((raw or {}).get("http_options") or {}).get("host") or "")

"""The HTTP API (FastAPI) over an ingress core: routes, error handlers and the guards in front of them.

    MetricsMiddleware -> AccessGuard (Host, token) -> BodyGuard (sizes, strict JSON, repo scope)
      -> AdmissionMiddleware (concurrency, queue, deadline, drain) -> routes

`build_http_app(core)` is called once per ingress replica (Serve's late-bound ASGI app) and by the
in-process tests, so both run exactly this app. The core is `serving.ray.app.IngressCore` (duck-typed here:
`search`, `graph`, `feedback`, `repos`, `health`, `config`, `admission`, `metrics`, `tokens`, `hosts`).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import JSONResponse, Response

from semantica.errors import ErrorKind
from semantica.runtime import observability
from semantica.runtime.observability import RequestContextMiddleware
from serving.api import catalog
from serving.api.http.admission import AdmissionMiddleware
from serving.api.http.body import add_body_schemas, json_body, request_body
from serving.api.http.contract import (
    BODY_ROUTE_ERRORS,
    HEALTH_ROUTE_ERRORS,
    KNOWLEDGE_READ_ERRORS,
    KNOWLEDGE_WRITE_ERRORS,
    METRICS_ROUTE_ERRORS,
    PLAN_ROUTE_ERRORS,
    READ_ROUTE_ERRORS,
    HealthBody,
    apply_request_limits,
    error_responses,
    text_response,
)
from serving.api.http.errors import Forbidden, NotFound, install_error_handlers, unknown_error_response
from serving.api.http.guards import AccessGuard, BodyGuard, principal_of
from serving.api.http.knowledge import KnowledgeApi, KnowledgeBody
from serving.api.http.metrics import CONTENT_TYPE, MetricsMiddleware
from serving.api.http.models import FeedbackBody, GraphBody, GrepBody, MapBody, SearchBody
from serving.api.http.plan import HttpPlanner, PlanAnswer, PlanBody

ROUTES = tuple(catalog.ROUTES)
UNHEALTHY = ("unavailable", "draining")
BODY_MODELS = (SearchBody, GrepBody, GraphBody, MapBody, PlanBody, FeedbackBody, KnowledgeBody)
"""The POST routes' bodies, each parsed once by `BodyGuard` and validated once by `json_body`."""


class PrometheusText(Response):
    """`/metrics`: Prometheus' text exposition format (its content type is what the document declares)."""

    media_type = CONTENT_TYPE


ADMISSION_EXEMPT = ("/healthz", "/metrics", "/docs", "/openapi.json")
"""Never shed: a platform's probes must see an overloaded server as alive and busy."""


def build_http_app(core: Any, behind_proxy: bool = False) -> FastAPI:
    """The app over `core`; `behind_proxy`: served by a Ray Serve replica, whose HTTP proxy owns X-Request-ID."""
    api = FastAPI(title="Semantica", version="1", description="Hybrid code search: dense + BM25 + symbols + code "
                  "graph, fused, reranked, with a cited context. Errors are JSON {error, message}.")
    observability.configure(core.config.observability)  # traces / JSON logs when conf turns them on

    def principal(request: Request) -> Any:
        return principal_of(request.scope)

    def readable(request: Request) -> Any:
        """What an error message may name for this caller: None (everything) unless its token is scoped."""
        caller = principal(request)
        if caller is None:  # an unauthenticated probe of a public path: no repository
            return lambda name: False
        return None if caller.unrestricted else caller.may_read

    install_error_handlers(api, readable)

    @api.post("/v1/search", responses=error_responses(BODY_ROUTE_ERRORS), openapi_extra=request_body(SearchBody))
    def http_search(request: Request, body: Annotated[SearchBody, json_body(SearchBody)]) -> JSONResponse:
        answer = core.search(body, principal(request))
        core.metrics.observe_search(answer)
        return JSONResponse(answer)

    @api.post("/v1/grep", responses=error_responses(BODY_ROUTE_ERRORS), openapi_extra=request_body(GrepBody))
    def http_grep(request: Request, body: Annotated[GrepBody, json_body(GrepBody)]) -> JSONResponse:
        return JSONResponse(core.grep(body, principal(request)))

    @api.post("/v1/graph", responses=error_responses(BODY_ROUTE_ERRORS), openapi_extra=request_body(GraphBody))
    def http_graph(request: Request, body: Annotated[GraphBody, json_body(GraphBody)]) -> JSONResponse:
        return JSONResponse(core.graph(body, principal(request)))

    @api.post("/v1/map", responses=error_responses(BODY_ROUTE_ERRORS),  # the repository map (serving/planning/repo_map.py)
              openapi_extra=request_body(MapBody))
    def http_map(request: Request, body: Annotated[MapBody, json_body(MapBody)]) -> JSONResponse:
        from serving.planning.repo_map import map_answer

        return JSONResponse(map_answer(core, body.model_dump(), principal(request)))

    planner = HttpPlanner(core.config)  # serving/api/http/plan.py: `semantica plan` of a manifest (docs/plan.md)

    @api.post("/v1/plan", response_model=PlanAnswer, responses=error_responses(PLAN_ROUTE_ERRORS),
              openapi_extra=request_body(PlanBody))
    def http_plan(request: Request, body: Annotated[PlanBody, json_body(PlanBody)]) -> JSONResponse:
        if not principal(request).unrestricted:
            raise Forbidden("a plan reads the server's file system: it needs a token that may read every repository")
        return JSONResponse(planner.plan(body))

    @api.post("/v1/feedback", status_code=201, responses=error_responses(BODY_ROUTE_ERRORS),
              openapi_extra=request_body(FeedbackBody))
    def http_feedback(request: Request, body: Annotated[FeedbackBody, json_body(FeedbackBody)]) -> JSONResponse:
        return JSONResponse(core.feedback(body, principal(request)), status_code=201)

    knowledge = KnowledgeApi(core.pipeline.knowledge.service)  # serving/api/http/knowledge.py (docs/knowledge.md)

    @api.get("/v1/knowledge", responses=error_responses(KNOWLEDGE_READ_ERRORS))
    def http_knowledge_list(request: Request, repo: str | None = None, query: str = "",
                            status: Annotated[list[str], Query()] = [],  # noqa: B006 (FastAPI copies defaults)
                            limit: Annotated[int, Query(ge=1, le=500)] = 50) -> JSONResponse:
        return JSONResponse(knowledge.list(principal(request), repo, query, status, limit))

    @api.get("/v1/knowledge/{entry_id}", responses=error_responses(KNOWLEDGE_READ_ERRORS))
    def http_knowledge_get(entry_id: str, request: Request) -> JSONResponse:
        return JSONResponse(knowledge.get(principal(request), entry_id))

    @api.post("/v1/knowledge", status_code=201, responses=error_responses(KNOWLEDGE_WRITE_ERRORS),
              openapi_extra=request_body(KnowledgeBody))
    def http_knowledge_add(request: Request, body: Annotated[KnowledgeBody, json_body(KnowledgeBody)]) -> JSONResponse:
        return JSONResponse(knowledge.add(principal(request), body), status_code=201)

    @api.get("/v1/repos", responses=error_responses(READ_ROUTE_ERRORS))
    def http_repos(request: Request) -> JSONResponse:
        return JSONResponse(core.repos(principal(request)))

    @api.get("/healthz", response_model=HealthBody, responses={
        **error_responses(HEALTH_ROUTE_ERRORS),
        ErrorKind.UNAVAILABLE.http_status: {"model": HealthBody, "description": "unavailable or draining"}})
    def http_health(request: Request) -> JSONResponse:
        report = core.health(principal(request))
        return JSONResponse(report, status_code=503 if report["status"] in UNHEALTHY else 200)

    @api.get("/metrics", response_class=PrometheusText, responses={
        **error_responses(METRICS_ROUTE_ERRORS), **text_response(CONTENT_TYPE, "Prometheus text exposition")})
    def http_metrics(request: Request) -> Response:
        if not principal(request).unrestricted:
            raise Forbidden("/metrics names every repository: it needs a token that may read all of them")
        return PrometheusText(core.metrics.render())

    published = api.openapi

    def openapi() -> dict[str, Any]:
        """FastAPI's document plus the checks the pipeline makes (`serving.api.http.contract`)."""
        return apply_request_limits(add_body_schemas(published(), BODY_MODELS), core.config)

    api.openapi = openapi  # type: ignore[method-assign]

    # add_middleware wraps: the last added runs first
    api.add_middleware(AdmissionMiddleware, controller=core.admission, exempt=ADMISSION_EXEMPT,
                       on_shed=lambda reason: core.metrics.shed.labels(reason).inc(),
                       deadlines={"/v1/plan": (core.config.plan.http_timeout_s, "plan.http_timeout_s")})
    api.add_middleware(BodyGuard, limits=core.config.limits, visible_repos=core.visible_repos,
                       unknown_repo=lambda name: NotFound(f"repository {name!r} has no published snapshot "
                                                          "(or this token may not read it)"))
    api.add_middleware(AccessGuard, hosts=core.hosts, tokens=core.tokens,
                       public_paths=tuple(core.config.auth.public_paths))
    api.add_middleware(MetricsMiddleware, metrics=core.metrics)
    api.add_middleware(RequestContextMiddleware, access_log=core.config.observability.access_log,  # outermost:
                       on_error=lambda exc: unknown_error_response(exc, "a route"),  # request id, root span
                       behind_proxy=behind_proxy)
    return api

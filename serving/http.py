"""The HTTP API (FastAPI) over an ingress core: routes, error handlers and the guards in front of them.

    MetricsMiddleware -> AccessGuard (Host, token) -> BodyGuard (sizes, strict JSON, repo scope)
      -> AdmissionMiddleware (concurrency, queue, deadline, drain) -> routes

`build_http_app(core)` is called once per ingress replica (Serve's late-bound ASGI app) and by the
in-process tests, so both run exactly this app. The core is `serving.app.IngressCore` (duck-typed here:
`search`, `graph`, `feedback`, `repos`, `health`, `config`, `admission`, `metrics`, `tokens`, `hosts`).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from serving.admission import AdmissionMiddleware
from serving.guards import AccessGuard, BodyGuard, principal_of
from serving.http_errors import Forbidden, NotFound, install_error_handlers
from serving.http_models import FeedbackBody, GraphBody, MapBody, SearchBody
from serving.metrics import CONTENT_TYPE, MetricsMiddleware

ROUTES = ("/v1/search", "/v1/graph", "/v1/feedback", "/v1/repos", "/healthz", "/metrics", "/v1/map")
UNHEALTHY = ("unavailable", "draining")
ADMISSION_EXEMPT = ("/healthz", "/metrics", "/docs", "/openapi.json")
"""Never shed: a platform's probes must see an overloaded server as alive and busy."""


def build_http_app(core: Any, known_errors: tuple[type[Exception], ...], status_of: Any, body_of: Any) -> FastAPI:
    api = FastAPI(title="Semantica", version="1", description="Hybrid code search: dense + BM25 + symbols + code "
                  "graph, fused, reranked, with a cited context. Errors are JSON {error, message}.")
    install_error_handlers(api, known_errors, status_of, body_of)

    def principal(request: Request) -> Any:
        return principal_of(request.scope)

    @api.post("/v1/search")
    def http_search(body: SearchBody, request: Request) -> JSONResponse:
        answer = core.search(body.model_dump(exclude_unset=True), principal(request))
        core.metrics.observe_search(answer)
        return JSONResponse(answer)

    @api.post("/v1/graph")
    def http_graph(body: GraphBody, request: Request) -> JSONResponse:
        return JSONResponse(core.graph(body.model_dump(exclude_unset=True), principal(request)))

    @api.post("/v1/map")  # the repository map (serving/planning/repo_map.py)
    def http_map(body: MapBody, request: Request) -> JSONResponse:
        from serving.planning.repo_map import map_answer

        return JSONResponse(map_answer(core, body.model_dump(), principal(request)))

    @api.post("/v1/feedback", status_code=201)
    def http_feedback(body: FeedbackBody, request: Request) -> JSONResponse:
        return JSONResponse(core.feedback(body.model_dump(), principal(request)), status_code=201)

    @api.get("/v1/repos")
    def http_repos(request: Request) -> JSONResponse:
        return JSONResponse(core.repos(principal(request)))

    @api.get("/healthz")
    def http_health(request: Request) -> JSONResponse:
        report = core.health(principal(request))
        return JSONResponse(report, status_code=503 if report["status"] in UNHEALTHY else 200)

    @api.get("/metrics")
    def http_metrics(request: Request) -> Response:
        if not principal(request).unrestricted:
            raise Forbidden("/metrics names every repository: it needs a token that may read all of them")
        return Response(core.metrics.render(), media_type=CONTENT_TYPE)

    # add_middleware wraps: the last added runs first
    api.add_middleware(AdmissionMiddleware, controller=core.admission, exempt=ADMISSION_EXEMPT,
                       on_shed=lambda reason: core.metrics.shed.labels(reason).inc())
    api.add_middleware(BodyGuard, limits=core.config.limits, visible_repos=core.visible_repos,
                       unknown_repo=lambda name: NotFound(f"repository {name!r} has no published snapshot "
                                                          "(or this token may not read it)"))
    api.add_middleware(AccessGuard, hosts=core.hosts, tokens=core.tokens,
                       public_paths=tuple(core.config.auth.public_paths))
    api.add_middleware(MetricsMiddleware, metrics=core.metrics)
    return api

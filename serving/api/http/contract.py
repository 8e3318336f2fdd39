"""The OpenAPI contract of the HTTP API: every status a route answers, with the one error body, and the
request constraints the server enforces, written into the document so that the schema and the server agree
(what the schema allows, the server accepts; `tests/serving/api/http/test_http_fuzz.py` fuzzes both with schemathesis).

The request models stay the validators; `apply_request_limits` only adds to the published document what
the pipeline checks later (non-empty query, repository-name rules, k and depth bounds from conf, known
strategies, modes and languages), so a client generating requests from the document never meets a refusal
it could not have read there.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from semantica.config import Config
from semantica.errors import ErrorKind
from semantica.languages import KNOWN_LANGUAGES
from serving.graph.structural import GraphOp
from serving.knowledge.entry import Kind, SourceKind, Status
from serving.planning.modes import SearchMode
from serving.retrievers.registry import enabled_specs


class FieldError(BaseModel):
    field: str = Field(description="the request field, dotted (`repos`, `hits.0.repo`); empty for the whole body")
    message: str


class ErrorBody(BaseModel):
    """Every error answer of the API (and of its guards in front of the routes)."""

    model_config = ConfigDict(extra="allow")
    error: str = Field(description="what kind of error: ValidationError, QueryError, UnknownRepoError, NotFound, ...")
    message: str = Field(description="one line saying what to fix; no server path, no stack trace")
    detail: list[FieldError] | None = Field(default=None, description="422: each invalid field")
    reason: str | None = Field(default=None, description="400 host_not_allowed; 503 queue_full, queue_timeout, draining, drain_timeout")
    stage: str | None = Field(default=None, description="503: the mandatory stage that is down")
    reference: str | None = Field(default=None, description="500: quote it; the server log has the detail")
    request_id: str | None = Field(default=None, description="the request's id (`X-Request-ID`): its log lines "
                                                             "carry it too")


class HealthBody(BaseModel):
    """`GET /healthz`: 200 when the server answers, 503 when a mandatory stage is down or it is draining."""

    model_config = ConfigDict(extra="allow")
    status: str = Field(description="ok, degraded, unavailable or draining")
    down: list[str] = Field(description="mandatory stages that do not answer")


WHY = {
    ErrorKind.BAD_REQUEST: "The request is refused: Host not served here, a malformed Content-Length, or a query the "
                           "pipeline cannot answer (the message says why).",
    ErrorKind.UNAUTHORIZED: "No bearer token, or a wrong one (auth is on).",
    ErrorKind.FORBIDDEN: "The token may not read what the route shows (or, for a plan, every repository).",
    ErrorKind.NOT_FOUND: "No published snapshot of a named repository (or the token may not read it), or no "
                         "symbol of that name.",
    ErrorKind.PAYLOAD_TOO_LARGE: "The body, a string, a list or the nesting is over a `limits.*` bound.",
    ErrorKind.INVALID: "The body is not the documented JSON (`detail` lists each invalid field), or a plan's "
                       "manifest names what this server does not plan.",
    ErrorKind.UNAVAILABLE: "Overloaded or draining (Retry-After), a mandatory stage is down, or no asked "
                           "repository's snapshot can be read.",
    ErrorKind.DEADLINE_EXCEEDED: "The request outlived `admission.deadline_s`.",
}
BODY_ROUTE_ERRORS = (ErrorKind.BAD_REQUEST, ErrorKind.UNAUTHORIZED, ErrorKind.NOT_FOUND, ErrorKind.PAYLOAD_TOO_LARGE,
                     ErrorKind.INVALID, ErrorKind.UNAVAILABLE, ErrorKind.DEADLINE_EXCEEDED)
"""What a POST route may answer besides its success: the guards' (Host, token, sizes, scope), validation,
admission (503, 504) and the pipeline's own."""
READ_ROUTE_ERRORS = (ErrorKind.BAD_REQUEST, ErrorKind.UNAUTHORIZED, ErrorKind.UNAVAILABLE,
                     ErrorKind.DEADLINE_EXCEEDED)
METRICS_ROUTE_ERRORS = (ErrorKind.BAD_REQUEST, ErrorKind.UNAUTHORIZED, ErrorKind.FORBIDDEN)
HEALTH_ROUTE_ERRORS = (ErrorKind.BAD_REQUEST, ErrorKind.UNAUTHORIZED)
KNOWLEDGE_READ_ERRORS = (*READ_ROUTE_ERRORS, ErrorKind.NOT_FOUND, ErrorKind.INVALID)
"""`GET /v1/knowledge[/{id}]`: a store or entry the token may not read answers like a missing one (404)."""
PLAN_ROUTE_ERRORS = (*BODY_ROUTE_ERRORS, ErrorKind.FORBIDDEN)
"""`POST /v1/plan`: it reads the server's file system, so only a token that may read every repository (403)."""
KNOWLEDGE_WRITE_ERRORS = (*BODY_ROUTE_ERRORS, ErrorKind.FORBIDDEN)
"""`POST /v1/knowledge`: the global store takes writes from unrestricted tokens only (403)."""


def error_responses(kinds: tuple[ErrorKind, ...]) -> dict[int | str, dict[str, Any]]:
    """FastAPI `responses=` for these error kinds, each with the real error body."""
    return {kind.http_status: {"model": ErrorBody, "description": WHY[kind]} for kind in kinds}


def text_response(media_type: str, description: str) -> dict[int | str, dict[str, Any]]:
    return {200: {"description": description, "content": {media_type: {"schema": {"type": "string"}}}}}


NOT_BLANK = r"[^\s\u0000-\u001f\u007f-\u009f]"
"""Some character that is neither a space nor a control character (C0, DEL, C1): what text fields must hold,
since control characters are dropped before a text is used."""
_NAME_CHAR = r"[^\u0000-\u001f\u007f-\u009f\u2028\u2029]"
_NAME_KEY = r"[^\s/\u0000-\u001f\u007f-\u009f\u2028\u2029]"
REPO_NAME_PATTERN = rf"^(?!(?:.*/)?\s*\.{{1,2}}\s*(?:/|$)){_NAME_CHAR}*{_NAME_KEY}{_NAME_CHAR}*$"
"""`semantica.ondisk.repo_names.normalize_repo_name` as a JSON-schema pattern: printable, some character that is not
a space or `/`, no `.` or `..` segment (the 255-byte bound on the encoded name is the server's alone)."""


_TEXT_CHAR = r"[^\u0000-\u0008\u000e-\u001f\u007f\ufffd]"
_TEXT_KEY = r"[^\s\u0085\u0000-\u0008\u000e-\u001f\u007f\ufffd]"
ENTRY_TEXT = rf"^{_TEXT_CHAR}*$"
"""`serving.knowledge.store.check_text` as a pattern: a knowledge entry's strings are plain text (no C0 control but
the line breaks and tab, no DEL, no replacement character; a lone surrogate, which the store refuses too, is no
character a pattern can name)."""
REQUIRED_ENTRY_TEXT = rf"^{_TEXT_CHAR}*{_TEXT_KEY}{_TEXT_CHAR}*$"
"""`ENTRY_TEXT` with some character that is not a space (a title and a text are required)."""
ABSOLUTE_PATH = "^/"
_REF_CHAR = r"[^*\u0000-\u0008\u000e-\u001f\u007f\ufffd]"
_REF_KEY = r"[^*\s\u0085\u0000-\u0008\u000e-\u001f\u007f\ufffd]"
CITED_FILE = rf"^{_REF_CHAR}*{_REF_KEY}{_REF_CHAR}*$"
"""An `adr` or `doc` entry's `source_ref`: one file of the repository's snapshot (no glob; whether the file is
there is the server's to say: 404)."""
GLOBAL_STORE = {"type": "string", "maxLength": 0}
"""`repo: ''` of a knowledge entry or listing: the global store."""


def repo_name_schema() -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "pattern": REPO_NAME_PATTERN}


def apply_request_limits(document: dict[str, Any], config: Config) -> dict[str, Any]:
    """Write the server's request checks into the request bodies' schemas of `document` (in place)."""
    schemas = document.get("components", {}).get("schemas", {})
    names = repo_name_schema()
    strategies = sorted(spec.name for spec in enabled_specs(config.retrieval.retrievers))
    limits = {
        "SearchBody": {
            "query": {"minLength": 1, "pattern": NOT_BLANK},
            "repos": {"items": names},
            "branch": {"anyOf": [names, {"type": "null"}]},  # checked as a name's part: `check_branch`
            "k": {"minimum": 1, "maximum": config.query.max_k},
            "context_budget": {"minimum": 0},
            "strategies": {"items": {"type": "string", "enum": strategies}},
            "mode": {"anyOf": [{"type": "string", "enum": [m.value for m in SearchMode]}, {"type": "null"}]},
            "languages": {"items": {"type": "string", "enum": sorted(KNOWN_LANGUAGES)}},
        },
        "GraphBody": {
            "op": {"enum": [op.value for op in GraphOp]},
            "name": {"minLength": 1, "maxLength": 1000, "pattern": NOT_BLANK},
            "repos": {"items": names},
            "depth": {"minimum": 1, "maximum": config.graph_ops.max_depth},
        },
        "MapBody": {
            "repos": {"items": names, "maxItems": 1},
            "tokens": {"minimum": 1, "maximum": config.repo_map.max_tokens},
        },
        "GrepBody": {
            "max_count": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
            "context": {"minimum": 0},
            "repos": {"items": names},
            "branch": {"anyOf": [names, {"type": "null"}]},
        },
        "PlanEntry": {"name": names},
        "PlanBody": {"repos": {"minItems": 1}},
        "FeedbackBody": {
            "query": {"minLength": 1, "pattern": NOT_BLANK},
            "repos": {"items": names},
            "snapshots": {"propertyNames": names},
        },
        "KnowledgeBody": _knowledge_limits(config),
    }
    search = limits["SearchBody"]
    if not config.cross_encoder.model_path.strip():  # asked for on a server without its model: a 400
        search["cross_encoder"] = {"anyOf": [{"type": "boolean", "enum": [False]}, {"type": "null"}]}
    knowledge = schemas.get("KnowledgeBody")
    if knowledge is not None:  # a cited source: an ADR or doc of a named repository
        cited = [kind.value for kind in (SourceKind.ADR, SourceKind.DOC)]
        knowledge["anyOf"] = [
            {"properties": {"source_kind": {"enum": [k.value for k in SourceKind if k.value not in cited]}}},
            {"required": ["source_kind", "source_ref", "repo"],
             "properties": {"source_kind": {"enum": cited}, "repo": names,
                            "source_ref": {"type": "string", "pattern": CITED_FILE}}}]
    feedback = schemas.get("FeedbackBody")
    if feedback is not None:  # what it selects: at least one of the three lists is not empty
        feedback["anyOf"] = [{"required": [name], "properties": {name: {"minItems": 1}}}
                             for name in ("chunk_ids", "hits", "knowledge_ids")]
    if "PlanEntry" in schemas:
        _limit_plan_entry(schemas["PlanEntry"], config)
    _limit_parameters(document)
    _json_errors(document)
    for model, fields in limits.items():
        properties = schemas.get(model, {}).get("properties", {})
        for name, extra in fields.items():
            if name in properties:
                target = properties[name]
                if "anyOf" in extra:
                    target.pop("type", None)
                target.update(extra)
    return document


def _limit_plan_entry(entry: dict[str, Any], config: Config) -> None:
    """Where a planned repository is, as `serving.api.http.plan.HttpPlanner` checks it: exactly one of an
    absolute server path and a URL of an allowed scheme (no scheme allowed: a path, and `url` null at most)."""
    path = {"required": ["path"], "properties": {"path": {"type": "string", "pattern": ABSOLUTE_PATH}}}
    schemes = config.plan.http_url_schemes
    if not schemes:
        entry.setdefault("properties", {})["url"] = {"type": "null", "default": None}
        entry["allOf"] = [path]
        return
    pattern = "^(?:" + "|".join(re.escape(scheme) for scheme in schemes) + ")://"
    entry["oneOf"] = [path, {"required": ["url"], "properties": {"url": {"type": "string", "pattern": pattern}}}]


def _knowledge_limits(config: Config) -> dict[str, Any]:
    """`POST /v1/knowledge`'s fields as the store checks them (`serving.knowledge.store`)."""
    limits = config.knowledge
    plain = {"type": "string", "pattern": ENTRY_TEXT}

    def required_text(most: int) -> dict[str, Any]:
        return {"minLength": 1, "maxLength": most, "pattern": REQUIRED_ENTRY_TEXT}

    return {"repos": {"items": repo_name_schema()}, "repo": {"anyOf": [repo_name_schema(), GLOBAL_STORE]},
            "title": required_text(limits.max_title_chars), "text": required_text(limits.max_text_chars),
            "kind": {"enum": [kind.value for kind in Kind]},
            "source_kind": {"enum": [kind.value for kind in SourceKind]},
            "source_ref": {"pattern": ENTRY_TEXT},
            "paths": {"items": plain}, "symbols": {"items": plain}, "evidence": {"items": plain}}


def _limit_parameters(document: dict[str, Any]) -> None:
    """Query parameters the server checks beyond their type: `GET /v1/knowledge`'s statuses and repository."""
    for parameter in document.get("paths", {}).get("/v1/knowledge", {}).get("get", {}).get("parameters", []):
        if parameter.get("name") == "status":
            parameter["schema"]["items"] = {"type": "string", "enum": [status.value for status in Status]}
        if parameter.get("name") == "repo":
            parameter["schema"]["anyOf"] = [repo_name_schema(), GLOBAL_STORE, {"type": "null"}]


def _json_errors(document: dict[str, Any]) -> None:
    """Every error answer is `ErrorBody` as JSON, also on a route whose success is not JSON (`/metrics`'
    403 is JSON, its 200 Prometheus text): FastAPI would document the error under the route's media type."""
    json_error = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            for status, response in operation.get("responses", {}).items():
                if str(status).startswith(("4", "5")) and "application/json" not in response.get("content", {}):
                    response["content"] = dict(json_error)

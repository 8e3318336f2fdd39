"""Every HTTP error is JSON `{error, message}` with the right status; nothing leaks a stack trace or a path.

Every exception declares its kind (`semantica.errors.ErrorKind`, the one table of statuses): `ApiError`
subclasses are raised by the middlewares before a route runs, the pipeline's own errors by the pipeline;
anything undeclared is a generic 500 whose detail stays in the server log under a request id the client
can quote.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from semantica.errors import ErrorKind, RepoFilter, declared_error_types, describe, scrub
from semantica.runtime.observability import request_id_var

log = logging.getLogger("semantica.http")

class ApiError(Exception):
    """An error the HTTP layer raises itself, with its kind (`semantica.errors.ErrorKind`: the status) and,
    optionally, extra response headers and body fields."""

    error_kind = ErrorKind.BAD_REQUEST
    error_name = ""  # the `error` field; the class name when empty

    def __init__(self, message: str, headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.headers = headers or {}
        self.error_fields = extra

    @property
    def status(self) -> int:
        return self.error_kind.http_status


class BadRequest(ApiError):
    error_kind = ErrorKind.BAD_REQUEST


class Unauthorized(ApiError):
    error_kind = ErrorKind.UNAUTHORIZED


class Forbidden(ApiError):
    error_kind = ErrorKind.FORBIDDEN


class NotFound(ApiError):
    error_kind = ErrorKind.NOT_FOUND


class PayloadTooLarge(ApiError):
    error_kind = ErrorKind.PAYLOAD_TOO_LARGE


class Unprocessable(ApiError):
    error_kind = ErrorKind.INVALID
    error_name = "ValidationError"  # the same name as a request-model validation error


class ClientClosed(ApiError):
    """The client hung up before its request was read: nobody reads the answer, /metrics counts a 499."""

    error_kind = ErrorKind.CLIENT_CLOSED


class Overloaded(ApiError):
    """The admission queue is full, or the server is draining (503 + Retry-After)."""

    error_kind = ErrorKind.UNAVAILABLE


class DeadlineExceeded(ApiError):
    """The request outlived `admission.deadline_s` (504)."""

    error_kind = ErrorKind.DEADLINE_EXCEEDED


def json_error(status: int, error: str, message: str, headers: dict[str, str] | None = None,
               **extra: Any) -> JSONResponse:
    """The one error body; `request_id` is the request's (`X-Request-ID`), the id its log lines carry."""
    body = {"error": error, "message": scrub(message), **extra}
    request_id = request_id_var.get()
    if request_id:
        body["request_id"] = request_id
    return JSONResponse(body, status_code=status, headers=headers)


def api_error_response(exc: ApiError) -> JSONResponse:
    return error_response(exc)


def error_response(exc: BaseException, may_read: RepoFilter | None = None) -> JSONResponse:
    """`exc` as the JSON answer its kind maps to (`semantica.errors.ErrorKind`); an undeclared one (a bug)
    is a generic 500 whose detail stays in the server log under a reference the client can quote."""
    report = describe(exc, may_read)
    if report.kind is ErrorKind.INTERNAL:
        return unknown_error_response(exc, "a route")
    return json_error(report.kind.http_status, report.error, report.message, getattr(exc, "headers", None) or None,
                      **report.fields)


def _validation_message(exc: RequestValidationError) -> tuple[str, list[dict[str, Any]]]:
    details = []
    for item in exc.errors():
        loc = ".".join(str(p) for p in item.get("loc", ()) if p != "body")
        details.append({"field": loc, "message": scrub(str(item.get("msg", "")))})
    summary = "; ".join(f"{d['field'] or 'body'}: {d['message']}" for d in details[:5]) or "invalid request"
    return summary, details


HTTP_METHOD_NOT_ALLOWED = 405


def allowed_methods(request: Request) -> list[str]:
    """Every method some route serves at this path (GET and POST /v1/knowledge are two routes)."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        if getattr(route, "methods", None) and route.matches(request.scope)[0] is not Match.NONE:
            methods |= set(route.methods)
    return sorted(methods)


def install_error_handlers(api: FastAPI, readable: Callable[[Request], RepoFilter | None]) -> None:
    """Validation errors -> 422 with the fields, every other exception -> the status its kind maps to
    (`error_response`); an unknown repository's message lists only what `readable(request)` accepts."""

    async def validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        message, details = _validation_message(exc)
        return json_error(ErrorKind.INVALID.http_status, "ValidationError", message, detail=details)

    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = dict(exc.headers or {})
        if exc.status_code == HTTP_METHOD_NOT_ALLOWED:  # Starlette's Allow names the first route's methods only
            headers["Allow"] = ", ".join(allowed_methods(request))
        return json_error(exc.status_code, "HTTPError", str(exc.detail), headers)

    async def declared(request: Request, exc: Exception) -> JSONResponse:
        return error_response(exc, readable(request))

    api.add_exception_handler(RequestValidationError, validation)
    api.add_exception_handler(StarletteHTTPException, http_error)
    for kind in declared_error_types():
        if issubclass(kind, Exception):
            api.add_exception_handler(kind, declared)
    api.add_exception_handler(Exception, declared)  # the last resort: a bug, a 500 (Starlette logs it)



def unknown_error_response(exc: BaseException, where: str) -> JSONResponse:
    """For ASGI middlewares outside FastAPI's handlers too: the generic 500."""
    ref = uuid.uuid4().hex[:12]
    log.error("unhandled error %s in %s", ref, where, exc_info=exc)
    return json_error(500, "InternalError", f"internal error (reference {ref}); the server log has the detail",
                      reference=ref)

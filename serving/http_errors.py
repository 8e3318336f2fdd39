"""Every HTTP error is JSON `{error, message}` with the right status; nothing leaks a stack trace or a path.

`ApiError` subclasses carry their status (the middlewares raise them before a route runs); the known
pipeline exceptions are mapped by `error_status`; anything else is a generic 500 whose detail stays in the
server log under a request id the client can quote.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from semantica.errors import scrub
from semantica.layout import LayoutError, UnknownRepoError

log = logging.getLogger("semantica.http")

class ApiError(Exception):
    """An error with its HTTP status and, optionally, extra response headers."""

    status = 400
    name = ""  # the `error` field; the class name when empty

    def __init__(self, message: str, headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.headers = headers or {}
        self.extra = extra


class BadRequest(ApiError):
    status = 400


class Unauthorized(ApiError):
    status = 401


class Forbidden(ApiError):
    status = 403


class NotFound(ApiError):
    status = 404


class PayloadTooLarge(ApiError):
    status = 413


class Unprocessable(ApiError):
    status = 422
    name = "ValidationError"  # the same name as a request-model validation error


class Overloaded(ApiError):
    """The admission queue is full, or the server is draining (503 + Retry-After)."""

    status = 503


class DeadlineExceeded(ApiError):
    """The request outlived `admission.deadline_s` (504)."""

    status = 504


def json_error(status: int, error: str, message: str, headers: dict[str, str] | None = None,
               **extra: Any) -> JSONResponse:
    return JSONResponse({"error": error, "message": scrub(message), **extra}, status_code=status, headers=headers)


def api_error_response(exc: ApiError) -> JSONResponse:
    return json_error(exc.status, exc.name or type(exc).__name__, str(exc), exc.headers, **exc.extra)


def _validation_message(exc: RequestValidationError) -> tuple[str, list[dict[str, Any]]]:
    details = []
    for item in exc.errors():
        loc = ".".join(str(p) for p in item.get("loc", ()) if p != "body")
        details.append({"field": loc, "message": scrub(str(item.get("msg", "")))})
    summary = "; ".join(f"{d['field'] or 'body'}: {d['message']}" for d in details[:5]) or "invalid request"
    return summary, details


def install_error_handlers(api: FastAPI, known_kinds: tuple[type[Exception], ...], status_of: Any,
                           body_of: Any) -> None:
    """Validation errors -> 422, `ApiError` -> its status, known pipeline errors -> `status_of(exc)`,
    anything else -> a JSON 500 with a request id (the traceback goes to the server log)."""

    async def validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        message, details = _validation_message(exc)
        return json_error(422, "ValidationError", message, detail=details)

    async def api_error(_: Request, exc: ApiError) -> JSONResponse:
        return api_error_response(exc)

    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return json_error(exc.status_code, "HTTPError", str(exc.detail), dict(exc.headers or {}))

    async def known(_: Request, exc: Exception) -> JSONResponse:
        status = status_of(exc)
        if status >= 500 and status != 503:
            return await unknown(_, exc)
        return JSONResponse({**body_of(exc), "message": scrub(body_of(exc).get("message", ""))}, status_code=status)

    async def unknown(request: Request, exc: Exception) -> JSONResponse:
        ref = uuid.uuid4().hex[:12]
        log.error("unhandled error %s on %s %s", ref, request.method, request.url.path, exc_info=exc)
        return json_error(500, "InternalError", f"internal error (reference {ref}); the server log has the detail",
                          reference=ref)

    api.add_exception_handler(RequestValidationError, validation)
    api.add_exception_handler(ApiError, api_error)
    api.add_exception_handler(StarletteHTTPException, http_error)
    for kind in (LayoutError, UnknownRepoError, *known_kinds):
        api.add_exception_handler(kind, known)
    api.add_exception_handler(Exception, unknown)

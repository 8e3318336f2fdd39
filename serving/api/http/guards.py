"""ASGI guards in front of the routes: Host allowlist + bearer token (`AccessGuard`), then body size, field
size, strict JSON and the caller's repository scope (`BodyGuard`). Each refuses with a JSON error before
the route (or a model, or the pipeline) sees the request.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from semantica.config import LimitsConfig
from semantica.ondisk.branch_keys import check_branch, split_branch_key
from semantica.ondisk.repo_names import RepoNameError
from serving.api.http.body import NO_JSON, PARSED, UNPARSED
from serving.api.http.errors import (
    ApiError,
    BadRequest,
    ClientClosed,
    PayloadTooLarge,
    Unauthorized,
    Unprocessable,
    api_error_response,
)
from serving.api.http.security import ANONYMOUS, HostAllowlist, Principal, TokenStore, bearer_token, check_repo_name

PRINCIPAL = "principal"
"""Key of the authenticated `Principal` in the ASGI scope's `state` (routes read `request.state.principal`)."""
BODY_METHODS = ("POST",)
"""The one method with a body that a route takes: any other goes to the router, which answers 405 with `Allow`."""


def principal_of(scope: dict[str, Any]) -> Principal:
    return scope.get("state", {}).get(PRINCIPAL, ANONYMOUS)


def _header(scope: dict[str, Any], name: bytes) -> str:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return ""


async def _refuse(exc: ApiError, scope: dict[str, Any], receive: Any, send: Any) -> None:
    await api_error_response(exc)(scope, receive, send)


class AccessGuard:
    """Host header first (DNS rebinding), then the bearer token unless the path is public or auth is off."""

    def __init__(self, app: Any, hosts: HostAllowlist, tokens: TokenStore | None, public_paths: tuple[str, ...]) -> None:
        self.app, self.hosts, self.tokens, self.public_paths = app, hosts, tokens, public_paths

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        hosts = [value for key, value in scope.get("headers", []) if key.lower() == b"host"]
        if len(hosts) > 1:  # RFC 9112 3.2: a request with more than one Host header is invalid
            await _refuse(BadRequest("more than one Host header", reason="duplicate_host"), scope, receive, send)
            return
        host = _header(scope, b"host")
        if not self.hosts.allows(host):
            await _refuse(BadRequest(f"Host {host!r} is not served here; add it to auth.allowed_hosts if it is yours",
                                     reason="host_not_allowed"), scope, receive, send)
            return
        principal: Principal | None = ANONYMOUS
        if self.tokens is not None:
            token = bearer_token(_header(scope, b"authorization"))
            principal = self.tokens.authenticate(token) if token else None
            if principal is None and scope["path"] not in self.public_paths:
                why = "a wrong bearer token" if token else "no bearer token"
                await _refuse(Unauthorized(f"{why}: send `Authorization: Bearer <token>` (see auth.token_file)",
                                           {"WWW-Authenticate": "Bearer"}), scope, receive, send)
                return
        scope.setdefault("state", {})[PRINCIPAL] = principal
        await self.app(scope, receive, send)


class BodyGuard:
    """Reads a request body once, bounded: Content-Length and the streamed size against `max_body_bytes`,
    then (JSON bodies) strict JSON (no NaN/Infinity), field sizes, repository names and the caller's scope:
    a restricted token's `repos` must be its own (404 otherwise, as for an unknown one) and an empty or
    missing `repos` becomes the repositories it may read at the body's `branch` (none: the default branch).
    Every POST route that reads repositories takes
    `repos`, so this one place guards them all."""

    def __init__(self, app: Any, limits: LimitsConfig, visible_repos: Callable[[Principal, str], list[str]],
                 unknown_repo: Callable[[str], ApiError]) -> None:
        self.app, self.limits, self.visible_repos, self.unknown_repo = app, limits, visible_repos, unknown_repo

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] not in BODY_METHODS:
            await self.app(scope, receive, send)
            return
        try:
            body = await self._read(scope, receive)
            self._check_json(scope, body)
        except ApiError as exc:
            await _refuse(exc, scope, receive, send)
            return
        await self.app(_with_length(scope, len(body)), _replay(body, receive), send)

    async def _read(self, scope: dict[str, Any], receive: Any) -> bytes:
        limit = self.limits.max_body_bytes
        declared = _header(scope, b"content-length")
        if declared:
            if not declared.isdigit():
                raise BadRequest(f"Content-Length {declared!r} is not a number")
            if int(declared) > limit:
                raise PayloadTooLarge(f"the body is {declared} bytes; the limit is limits.max_body_bytes={limit}")
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientClosed("the client went away before sending the whole body")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise PayloadTooLarge(f"the body is over limits.max_body_bytes={limit} bytes")
            parts.append(chunk)
            if not message.get("more_body", False):
                return b"".join(parts)

    def _check_json(self, scope: dict[str, Any], body: bytes) -> None:
        """Parse a JSON body once: bound it, scope its `repos`, and keep the value for the route
        (`serving.api.http.body.json_body` validates it; nothing parses the bytes again)."""
        state = scope.setdefault("state", {})
        content_type = _header(scope, b"content-type").lower()
        if content_type and "json" not in content_type:
            state[UNPARSED] = f"the body is {content_type.split(';')[0]}: {NO_JSON}"
            return
        if not body:
            state[UNPARSED] = f"the body is empty: {NO_JSON}"
            return
        try:
            value = json.loads(body, parse_constant=_reject_constant)
        except Unprocessable:
            raise
        except RecursionError:  # deeper than the parser's stack: far past limits.max_json_depth
            raise PayloadTooLarge(f"body: nested deeper than limits.max_json_depth={self.limits.max_json_depth}") from None
        except ValueError as exc:
            state[UNPARSED] = f"the body is not JSON ({exc}): {NO_JSON}"
            return
        self._check_sizes(value, "body", 0)
        if isinstance(value, dict) and scope["path"].startswith("/v1/"):
            scoped = self._scope_repos(principal_of(scope), value)
            if scoped is not None:
                value = value | {"repos": scoped}
        state[PARSED] = value

    def _check_sizes(self, value: Any, where: str, depth: int) -> None:
        limits = self.limits
        if depth > limits.max_json_depth:
            raise PayloadTooLarge(f"{where}: nested deeper than limits.max_json_depth={limits.max_json_depth}")
        if isinstance(value, str) and len(value) > limits.max_string_chars:
            raise PayloadTooLarge(f"{where}: {len(value)} characters; limits.max_string_chars={limits.max_string_chars}")
        if isinstance(value, list):
            if len(value) > limits.max_list_items:
                raise PayloadTooLarge(f"{where}: {len(value)} items; limits.max_list_items={limits.max_list_items}")
            for i, item in enumerate(value):
                self._check_sizes(item, f"{where}[{i}]", depth + 1)
        if isinstance(value, dict):
            if len(value) > limits.max_list_items:
                raise PayloadTooLarge(f"{where}: {len(value)} keys; limits.max_list_items={limits.max_list_items}")
            for key, item in value.items():
                self._check_sizes(key, f"{where} key", depth + 1)
                self._check_sizes(item, f"{where}.{key}", depth + 1)

    def _scope_repos(self, principal: Principal, body: dict[str, Any]) -> list[str] | None:
        """The `repos` to put in the body for this caller, or None to leave the body as it is."""
        if "repos" in body and not isinstance(body["repos"], list):
            return None  # the model answers 422 (`null` too: it is not a list, and not a missing field)
        requested = body.get("repos")
        requested = [_entry_name(item) for item in requested or []]  # a plan's manifest entries: their names
        if not all(isinstance(name, str) for name in requested):
            return None  # the model answers 422
        if principal.unrestricted:
            return None  # the route's model checks the names
        for name in requested or []:  # a name must be valid before it is compared with the token's globs
            try:
                check_repo_name(name)
            except ValueError as exc:
                raise Unprocessable(f"repos: {exc}", detail=[{"field": "repos", "message": str(exc)}]) from None
        for name in requested or []:
            if not principal.may_read(name):
                raise self.unknown_repo(name)
        if requested:
            return None
        branch = body.get("branch")
        if branch is not None and (not isinstance(branch, str) or not _valid_branch(branch)):
            return None  # the model answers 422 (the body is refused before any route reads a repository)
        visible = self.visible_repos(principal, branch or "")
        if branch:  # bare names: the ingress resolves them at the branch
            visible = [split_branch_key(repo)[0] for repo in visible]
        if not visible:
            raise self.unknown_repo("*")
        return visible


def _valid_branch(branch: str) -> bool:
    try:
        check_branch(branch)
    except RepoNameError:
        return False
    return True


def _entry_name(item: Any) -> Any:
    """A `repos` item's repository name: the item itself, or a manifest entry's `name` (`POST /v1/plan`)."""
    return item.get("name") if isinstance(item, dict) else item


def _reject_constant(name: str) -> float:
    raise Unprocessable(f"{name} is not JSON: send finite numbers only")


def _with_length(scope: dict[str, Any], length: int) -> dict[str, Any]:
    headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-length"]
    return {**scope, "headers": [*headers, (b"content-length", str(length).encode())]}


def _replay(body: bytes, receive: Any) -> Any:
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: the disconnect, when it comes

    return replay

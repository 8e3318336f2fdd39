"""Who may reach `semantica mcp --transport streamable-http`: the same rules as `semantica serve`.

Off loopback (or with `auth.mode: required`) a bearer token is required: the unrestricted one in
`auth.token_file` (MCP tools have no per-token repository scope, so a scoped token is refused rather
than shown every repository). Host and Origin are checked by the SDK's DNS-rebinding protection
(`TransportSecuritySettings`) against the allow-list `serve` uses. Two Host headers are refused outright
(RFC 9112: a request with more than one is invalid).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings

from semantica.config import AuthConfig
from serving.api.http.security import ALL_REPOS, HostAllowlist, TokenStore, bearer_token

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
ORIGIN_SCHEMES = ("http", "https")


def transport_security(config: AuthConfig, bound_host: str) -> TransportSecuritySettings:
    """The SDK's Host/Origin check over `serve`'s allow-list (any port; `*` in auth.allowed_hosts: off)."""
    hosts = HostAllowlist.of(config, bound_host).hosts
    if "*" in hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    allowed_hosts = [form for host in sorted(hosts) for form in (host, f"{host}:*")]
    origins = [f"{scheme}://{form}" for scheme in ORIGIN_SCHEMES for form in allowed_hosts]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=allowed_hosts,
                                     allowed_origins=origins)


class McpHttpGuard:
    """ASGI middleware: one Host header, and a valid unrestricted bearer token when `tokens` is set."""

    def __init__(self, app: ASGIApp, tokens: TokenStore | None) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope.get("headers", [])]
        if sum(1 for k, _ in headers if k == "host") > 1:
            await _refuse(send, 400, "bad_request", "more than one Host header")
            return
        if self.tokens is not None:
            presented = bearer_token(next((v for k, v in headers if k == "authorization"), ""))
            principal = self.tokens.authenticate(presented) if presented else None
            if principal is None:
                await _refuse(send, 401, "unauthorized", "a bearer token is required (auth.token_file)",
                              [(b"www-authenticate", b"Bearer")])
                return
            if ALL_REPOS not in principal.repos:
                await _refuse(send, 403, "forbidden", "MCP serves every repository: use the unrestricted "
                                                      "token in auth.token_file, not a scoped one")
                return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, error: str, message: str,
                  extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"error": error, "message": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *(extra or [])]})
    await send({"type": "http.response.body", "body": body})

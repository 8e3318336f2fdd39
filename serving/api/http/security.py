"""Who may call the HTTP API and what they may read: bearer tokens, per-token repository globs, Host allowlist.

Tokens live in files, never in conf or on the command line: `auth.token_file` (one token that sees every
repository; `semantica serve` creates it, mode 0600) and optionally `auth.tokens_file` (YAML list of
`{name, token, repos: [glob, ...]}` for tokens scoped to some repositories). Tokens are compared in constant
time against every known token, so timing tells nothing about which one nearly matched.
"""

from __future__ import annotations

import fnmatch
import hmac
import ipaddress
import os
import re
import secrets
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import yaml

from semantica.config import AuthConfig, ConfigError
from semantica.ondisk.repo_names import normalize_repo_name

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")
TOKEN_BYTES = 32
ALL_REPOS = "*"


class AuthMode(str, Enum):
    """`auto`: a token is required unless the server is bound to loopback; `required`: always."""

    AUTO = "auto"
    REQUIRED = "required"

    @classmethod
    def parse(cls, value: str) -> AuthMode:
        try:
            return cls(str(value).lower())
        except ValueError:
            raise ConfigError(f"auth.mode {value!r} is unknown; known modes: "
                              f"{', '.join(m.value for m in cls)}") from None


def is_loopback(host: str) -> bool:
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def auth_required(config: AuthConfig, bound_host: str) -> bool:
    return AuthMode.parse(config.mode) is AuthMode.REQUIRED or not is_loopback(bound_host)


@dataclass(frozen=True)
class Principal:
    """An authenticated caller (or the anonymous loopback caller when auth is off) and its repository globs."""

    name: str
    repos: tuple[str, ...] = (ALL_REPOS,)

    @property
    def unrestricted(self) -> bool:
        return ALL_REPOS in self.repos

    def may_read(self, repo: str) -> bool:
        return self.unrestricted or any(fnmatch.fnmatchcase(repo, glob) for glob in self.repos)

    def visible(self, repos: list[str]) -> list[str]:
        return [r for r in repos if self.may_read(r)]


ANONYMOUS = Principal("anonymous")


def ensure_token_file(path: str | os.PathLike[str]) -> tuple[Path, bool]:
    """Create the token file (0600, parent 0700) with a fresh random token unless it exists; (path, created)."""
    target = Path(path).expanduser().resolve()
    if target.exists():
        if not target.read_text().strip():
            raise ConfigError(f"auth.token_file {target} is empty: delete it to get a new token, or write one")
        return target, False
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, (secrets.token_urlsafe(TOKEN_BYTES) + "\n").encode())
    finally:
        os.close(fd)
    return target, True


@dataclass
class TokenStore:
    """Known tokens -> principals; `authenticate` is constant-time over all of them."""

    tokens: list[tuple[bytes, Principal]] = field(default_factory=list)

    @staticmethod
    def load(config: AuthConfig) -> TokenStore:
        store = TokenStore()
        main = Path(config.token_file).expanduser()
        if main.exists():
            store.add(main.read_text().strip(), Principal("token_file"))
        if config.tokens_file:
            store.load_scoped(Path(config.tokens_file).expanduser())
        return store

    def add(self, token: str, principal: Principal) -> None:
        if not token:
            raise ConfigError(f"empty token for {principal.name!r}")
        self.tokens.append((token.encode(), principal))

    def load_scoped(self, path: Path) -> None:
        if not path.exists():
            raise ConfigError(f"auth.tokens_file {path} does not exist")
        entries = yaml.safe_load(path.read_text()) or []
        if not isinstance(entries, list):
            raise ConfigError(f"{path}: expected a list of {{name, token, repos}} entries")
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict) or not entry.get("token") or not isinstance(entry.get("repos"), list):
                raise ConfigError(f"{path}: entry {i} needs a non-empty `token` and a `repos` list of globs")
            self.add(str(entry["token"]), Principal(str(entry.get("name", f"token-{i}")),
                                                    tuple(str(g) for g in entry["repos"])))

    def authenticate(self, presented: str) -> Principal | None:
        given = presented.encode()
        found: Principal | None = None
        for token, principal in self.tokens:  # no early exit: every comparison is made
            if hmac.compare_digest(token, given) and found is None:
                found = principal
        return found


def bearer_token(authorization: str) -> str:
    scheme, _, value = authorization.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


@dataclass
class HostAllowlist:
    """Host headers the API answers (DNS rebinding: a hostile page's name resolving to us is refused)."""

    hosts: frozenset[str]

    @staticmethod
    def of(config: AuthConfig, bound_host: str) -> HostAllowlist:
        names = {*LOOPBACK_HOSTS, *(h.lower() for h in config.allowed_hosts)}
        unspecified = bound_host in ("0.0.0.0", "::", "[::]", "")
        if not unspecified:
            names.add(bound_host.lower())
            if ":" in bound_host and not bound_host.startswith("["):
                names.add(f"[{bound_host.lower()}]")
        return HostAllowlist(frozenset(names))

    def allows(self, host_header: str) -> bool:
        if "*" in self.hosts:
            return True
        name = host_name(host_header)
        return bool(name) and name in self.hosts


_HOST = re.compile(r"(?:(?P<v6>\[[0-9a-f:.]+\])|(?P<name>[^\[\]:/@\s]+))(?::[0-9]{1,5})?")


def host_name(header: str) -> str:
    """The host of a Host header, lowercased, without its port: `name[:port]`, `v4[:port]` or a bracketed
    IPv6 address `[v6][:port]`; "" for anything else (`[::1]evil.example` is not a Host header)."""
    value = header.strip().lower()
    if value.count(":") > 1 and not value.startswith("["):  # a bare IPv6 address (no port possible)
        return value if _is_ip(value) else ""
    match = _HOST.fullmatch(value)
    if match is None:
        return ""
    v6 = match.group("v6")
    return ("" if not _is_ip(v6[1:-1]) else v6) if v6 else match.group("name")


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def check_repo_name(name: str) -> str:
    """A repository name a request may carry: the one validator (`semantica.ondisk.repo_names.normalize_repo_name`)."""
    if not isinstance(name, str):
        raise ValueError(f"repository name must be a string, got {type(name).__name__}")
    return normalize_repo_name(name)

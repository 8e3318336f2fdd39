"""Client-facing error text: one short line, no stack trace, no absolute server path.

The full exception (Java stack trace, paths) goes to the server log; a response, a `degraded` entry
or the repos listing carries only `public_message(exc)`.
"""

from __future__ import annotations

import errno
import os
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

MESSAGE_MAX_CHARS = 300
_ABSOLUTE_PATH = re.compile(r"(?<![\w.~])(?:/[^\s/'\"(),:;\[\]]+)+/?")
_JAVA_FRAME = re.compile(r"\s+at [\w$.<>]+\(.*")


def _short_path(match: re.Match[str]) -> str:
    parts = [p for p in match.group(0).split("/") if p]
    return f".../{parts[-1]}" if len(parts) > 1 else match.group(0)


def scrub(text: str) -> str:
    """`text` on one line, Java frames dropped, each absolute path cut to its last component."""
    text = _JAVA_FRAME.split(text, maxsplit=1)[0]
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    first = _ABSOLUTE_PATH.sub(_short_path, first)
    return first if len(first) <= MESSAGE_MAX_CHARS else first[: MESSAGE_MAX_CHARS - 3] + "..."


def public_message(exc: BaseException) -> str:
    """`Type: what went wrong`, safe to show a client; a permission error says so."""
    if isinstance(exc, PermissionError) or getattr(exc, "errno", None) == errno.EACCES:
        name = getattr(exc, "filename", None)
        where = f" on {str(name).rstrip('/').rsplit('/', 1)[-1]}" if name else ""
        return f"PermissionError: permission denied{where}"
    if isinstance(exc, FileNotFoundError) and getattr(exc, "filename", None):
        return f"FileNotFoundError: {str(exc.filename).rstrip('/').rsplit('/', 1)[-1]} does not exist"
    kind = type(exc).__name__
    java = getattr(exc, "classname", None)  # pyjnius JavaException: the Java class says more than its Python type
    if java and getattr(exc, "innermessage", None) is not None:
        return f"{kind}: {java}: {scrub(str(exc.innermessage))}"
    detail = scrub(str(exc))
    return f"{kind}: {detail}" if detail else kind


def path_exists(path: str | os.PathLike[str]) -> bool:
    """Like `Path.exists`, but a permission error is raised, never read as "does not exist" (newer
    Pythons' `Path.exists` and `os.path.exists` return False for EACCES)."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    return True


# -- the error taxonomy: one table from an error's kind to what every surface answers -----------------


class ErrorKind(Enum):
    """What went wrong, as every surface reports it: HTTP status, JSON-RPC (MCP) code, CLI exit code.

    An exception declares its kind with a class attribute `error_kind`; `kind_of` reads it. The MCP codes
    are JSON-RPC's (-32602 invalid params, -32603 internal) and MCP's -32002 (resource not found); the rest
    are in the server-defined range. Every failure of a `semantica` command exits 1 (argparse's usage
    errors exit 2, Ctrl-C 130): the kind is in the one-line message, not in the exit code."""

    BAD_REQUEST = ("bad_request", 400, -32602, 1)
    UNAUTHORIZED = ("unauthorized", 401, -32001, 1)
    FORBIDDEN = ("forbidden", 403, -32003, 1)
    NOT_FOUND = ("not_found", 404, -32002, 1)
    PAYLOAD_TOO_LARGE = ("payload_too_large", 413, -32005, 1)
    INVALID = ("invalid", 422, -32602, 1)
    CLIENT_CLOSED = ("client_closed", 499, -32800, 1)
    INTERNAL = ("internal", 500, -32603, 1)
    UNAVAILABLE = ("unavailable", 503, -32000, 1)
    DEADLINE_EXCEEDED = ("deadline_exceeded", 504, -32004, 1)

    def __init__(self, slug: str, http_status: int, mcp_code: int, cli_exit: int) -> None:
        self.slug, self.http_status, self.mcp_code, self.cli_exit = slug, http_status, mcp_code, cli_exit

    @property
    def caller_error(self) -> bool:
        """The request is at fault (4xx): it passes through every layer unchanged, never as a 500."""
        return 400 <= self.http_status < 500


CLI_INTERRUPTED_EXIT = 130
LOCAL_KINDS: tuple[tuple[type[BaseException], ErrorKind], ...] = (
    (PermissionError, ErrorKind.FORBIDDEN),
    (OSError, ErrorKind.UNAVAILABLE),
    (sqlite3.Error, ErrorKind.UNAVAILABLE),  # a full disk surfaces from the parse cache this way
    (LookupError, ErrorKind.NOT_FOUND),
    (ValueError, ErrorKind.INVALID),
    (RuntimeError, ErrorKind.INTERNAL),
)
"""Built-in exceptions a local surface (CLI, MCP, daemon) reports as one line: there they come from the
user's own files and arguments. Over HTTP an undeclared exception is a bug: a 500 with a reference."""


def kind_of(exc: BaseException) -> ErrorKind:
    """The kind `exc`'s class declares (`error_kind`), else INTERNAL."""
    kind = getattr(exc, "error_kind", None)
    return kind if isinstance(kind, ErrorKind) else ErrorKind.INTERNAL


def local_kind_of(exc: BaseException) -> ErrorKind | None:
    """For a local surface: the declared kind, else `LOCAL_KINDS`' entry, else None (a bug: let it raise)."""
    kind = getattr(exc, "error_kind", None)
    if isinstance(kind, ErrorKind):
        return kind
    return next((k for base, k in LOCAL_KINDS if isinstance(exc, base)), None)


def declared_error_types() -> list[type[BaseException]]:
    """Every loaded exception class that declares its own `error_kind` (a web framework registers one
    handler per class: a handler for `Exception` itself is its last resort, which logs a traceback)."""
    found: list[type[BaseException]] = []
    seen: set[type] = set()
    stack: list[type] = [BaseException]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in seen:
                seen.add(sub)
                stack.append(sub)
                if isinstance(sub.__dict__.get("error_kind"), ErrorKind):
                    found.append(sub)
    return found


RepoFilter = Callable[[str], bool]


@dataclass(frozen=True)
class ErrorReport:
    """One error as a caller sees it: its kind, its name (the `error` field), a one-line message and the
    kind's extra fields (e.g. `stage` of an unavailable stage)."""

    kind: ErrorKind
    error: str
    message: str
    fields: dict[str, Any] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        """The JSON error body of every surface: `{error, message, ...fields}`."""
        return {"error": self.error, "message": self.message, **self.fields}


def describe(exc: BaseException, may_read: RepoFilter | None = None, *, kind: ErrorKind | None = None) -> ErrorReport:
    """`exc` for a caller who may read the repositories `may_read` accepts (None: every one). An error that
    names repositories (`message_for`) lists only those; the message is one line with server paths cut."""
    render = getattr(exc, "message_for", None)
    text = render(may_read) if callable(render) else str(exc)
    extra = getattr(exc, "error_fields", None)
    fields = dict(extra() if callable(extra) else extra or {})
    name = getattr(exc, "error_name", "") or type(exc).__name__
    return ErrorReport(kind or kind_of(exc), name, scrub(text) if text else public_message(exc), fields)

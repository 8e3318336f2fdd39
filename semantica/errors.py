"""Client-facing error text: one short line, no stack trace, no absolute server path.

The full exception (Java stack trace, paths) goes to the server log; a response, a `degraded` entry
or the repos listing carries only `public_message(exc)`.
"""

from __future__ import annotations

import errno
import os
import re

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

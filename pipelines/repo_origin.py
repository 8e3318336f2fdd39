"""A repository's name when the caller gives none: `owner/name` from its origin remote, else its directory."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

_REMOTE_URL = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|[\w.-]+@[\w.-]+:)", re.I)


def repo_name_from_path(repo_path: str) -> str:
    """`owner/name` from the origin remote URL, else the directory name.

    A trailing `repo` or `.git` component is skipped and a `.git` suffix dropped, so
    `/x/psf+requests/repo` -> `psf+requests` and `/x/flask.git` -> `flask`.
    """
    result = subprocess.run(["git", "-C", repo_path, "config", "--get", "remote.origin.url"], capture_output=True,
                            check=False)
    url = result.stdout.decode("utf-8", "replace").strip() if result.returncode == 0 else ""
    if _REMOTE_URL.match(url):
        tail = re.split(r"[:/]", url.rstrip("/"))
        parts = [p for p in tail if p]
        if len(parts) >= 2:
            name = parts[-1][: -len(".git")] if parts[-1].endswith(".git") else parts[-1]
            return f"{parts[-2]}/{name}"
    parts = list(Path(repo_path).resolve().parts)
    while len(parts) > 1 and parts[-1] in ("repo", ".git"):
        parts.pop()
    name = parts[-1]
    return name[: -len(".git")] if name.endswith(".git") and len(name) > len(".git") else name

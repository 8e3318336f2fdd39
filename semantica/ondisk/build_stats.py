"""Index build outcomes per repository, kept in one small JSON file (`metrics.build_stats_file`).

`semantica index` / `index-batch` record each build here; the server's `/metrics` exposes the totals as
`semantica_index_builds{repo,outcome}` and `semantica_index_build_seconds{repo}`. A file instead of a
pushgateway: nothing more to run, and a scrape of any replica on the same disk sees the builds.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

from semantica.config import Config

DEFAULT_FILE = ".build-stats.json"
"""In the index root: every node that serves the index sees it; not a directory, so never a repository."""


def build_stats_path(config: Config) -> Path:
    return Path(config.metrics.build_stats_file or Path(config.paths.index_root) / DEFAULT_FILE)


def record_build(path: str | os.PathLike[str], repo: str, seconds: float, ok: bool) -> None:
    """Add one build to the totals (an exclusive lock makes concurrent builds add up; atomic replace)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stats = read_build_stats(target)
        row = stats.setdefault(repo, {"ok": 0, "failed": 0, "seconds": 0.0})
        row["ok" if ok else "failed"] += 1
        row["seconds"] = round(row["seconds"] + seconds, 3)
        tmp = target.with_suffix(".tmp")
        tmp.write_text(json.dumps(stats, indent=1, sort_keys=True, allow_nan=False))
        os.replace(tmp, target)


def read_build_stats(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The totals; {} when nothing was built yet or the file is unreadable (metrics never fail a scrape)."""
    try:
        value = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}

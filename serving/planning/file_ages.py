"""Last-commit time of every file of a snapshot, from one `git log` at the snapshot's commit.

Why query time and not index time: the snapshot already records its source and commit (`Manifest.source`),
and a commit never changes, so one `git log --name-only` walk back from that commit answers for every file
at once and is cached per (repository, commit) in memory and on disk. Snapshots built before this existed
work unchanged (no re-index), and `--since` bounds the walk to `freshness_horizon_days` before the commit, so
a repository with a long history costs what its recent history costs. `git blame` would be per file and
line: far more work for a per-file age.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from semantica.ondisk.source import GitError, run_git
from semantica.runtime.encoder import safe_name

_DAY_S = 86400.0
AGES_DIR = "file_ages"


class FileAges:
    """`times(git_dir, commit)` -> (commit time, {path: last commit time within the horizon})."""

    def __init__(self, cache_dir: str | Path, horizon_days: float, timeout_s: float) -> None:
        self.cache_dir = Path(cache_dir) / AGES_DIR
        self.horizon_days = horizon_days
        self.timeout_s = timeout_s
        self._memory: dict[tuple[str, str], tuple[float, dict[str, float]]] = {}
        self._lock = threading.Lock()

    def times(self, git_dir: str, commit: str, key: str = "") -> tuple[float, dict[str, float]]:
        """GitError when git cannot answer (no source on this machine, unknown commit)."""
        cache_key = (key or git_dir, commit)
        with self._lock:
            if cache_key in self._memory:
                return self._memory[cache_key]
        file = self.cache_dir / f"{safe_name(key or git_dir)}-{commit}-{int(self.horizon_days)}d.json"
        if file.is_file():
            data = json.loads(file.read_text())
            answer = (float(data["commit_time"]), {p: float(t) for p, t in data["files"].items()})
        else:
            answer = self._from_git(git_dir, commit)
            file.parent.mkdir(parents=True, exist_ok=True)
            tmp = file.with_suffix(".tmp")
            tmp.write_text(json.dumps({"commit_time": answer[0], "files": answer[1]}))
            tmp.replace(file)
        with self._lock:
            self._memory[cache_key] = answer
        return answer

    def _from_git(self, git_dir: str, commit: str) -> tuple[float, dict[str, float]]:
        if not commit:
            raise GitError("the snapshot records no commit")
        head = run_git(git_dir, ["show", "-s", "--format=%ct", commit], self.timeout_s).decode().strip()
        commit_time = float(head)
        since = int(commit_time - self.horizon_days * _DAY_S)
        out = run_git(git_dir, ["log", "--format=%x01%ct", "--name-only", "--no-renames", "-z",
                                f"--since={since}", commit], self.timeout_s)
        files: dict[str, float] = {}
        current = commit_time
        for part in out.split(b"\0"):
            for piece in part.split(b"\n"):
                if piece.startswith(b"\x01"):
                    current = float(piece[1:])
                elif piece:
                    files.setdefault(piece.decode("utf-8", "surrogateescape"), current)  # newest first
        return commit_time, files


def freshness(commit_time: float, file_time: float | None, half_life_days: float) -> float:
    """2 ** (-age / half-life) in [0, 1]; 0 for a file not touched within the horizon."""
    if file_time is None or half_life_days <= 0:
        return 0.0
    age_days = max(0.0, commit_time - file_time) / _DAY_S
    return float(2.0 ** (-age_days / half_life_days))

"""Is a snapshot behind its source? The `stale` flag every answer carries.

A working tree: one `git status` (git's index stat data; clean files are never re-hashed) names the
paths that differ from HEAD. Only those paths, the paths that were dirty when the snapshot was built,
and (when HEAD moved) the paths the two commits differ in are hashed and compared with the snapshot's
blob shas, so `stale` is true exactly when indexed content differs, whatever git calls the change.
A git ref: the ref's commit now against the commit indexed (a pinned sha never goes stale).

A working tree that inotify watches (`semantica.ondisk.tree_watch`) reuses its last check while no event came
under it, for at most `freshness.watch_max_age_s`: an answer then costs a read of the event queue, not a `git
status` (`checked_by: "watch"`).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from semantica.config import FreshnessConfig
from semantica.ondisk.source import (
    FileBlobs,
    FileChanges,
    GitError,
    SourceKind,
    SourceRecord,
    compare_blobs,
    diff_paths,
    git_status,
    resolve_commit,
    run_git,
    worktree_blob,
)
from semantica.ondisk.tree_watch import TreeWatcher
from semantica.schema import Manifest

HEX = frozenset("0123456789abcdef")
WATCH_MAX_DIRS = 20_000  # a tree with more directories is checked with git on every answer (the kernel's watch limit)
REMEMBERED_CHECKS = 256  # (snapshot, tree) checks kept for reuse
CHECKED_BY_GIT = "git"
CHECKED_BY_WATCH = "watch"


@dataclass
class Freshness:
    """How fresh one snapshot is. `stale` None = could not be checked (`reason` says why)."""

    repo: str
    snapshot_id: str
    commit: str  # the commit the snapshot was built from (HEAD of the working tree when it was read)
    built_at: str
    dirty: bool = False  # built from a working tree with uncommitted changes (`Manifest.built_dirty`)
    source: str = ""  # worktree | git | "" (an older snapshot that recorded no source)
    path: str = ""
    ref: str = ""
    branch: str = ""
    stale: bool | None = None
    reason: str = ""
    current_commit: str = ""
    current_branch: str = ""
    changed: dict[str, list[str]] = field(default_factory=dict)  # edited/added/deleted/renamed (first max_listed)
    changed_count: int = 0
    check_ms: float = 0.0
    checked_by: str = CHECKED_BY_GIT  # "watch": no event under the tree since a git check (the one reused)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """One line for the CLI."""
        state = {True: "STALE", False: "fresh", None: "unknown"}[self.stale]
        where = f"{self.source or 'source?'} {self.branch or self.ref or ''}".strip()
        text = f"{state}: snapshot {self.commit[:12] or '(no commit)'} built {self.built_at} from {where}"
        return f"{text} - {self.reason}" if self.reason else text


@dataclass
class _Remembered:
    version: int
    at: float  # time.monotonic() of the git check
    result: Freshness


class CheckMemory:
    """The last git check of each (snapshot, working tree), with the tree's change counter when it started."""

    def __init__(self) -> None:
        self._checks: OrderedDict[tuple[str, str], _Remembered] = OrderedDict()
        self._lock = threading.Lock()

    def reusable(self, key: tuple[str, str], version: int, max_age_s: float) -> Freshness | None:
        with self._lock:
            found = self._checks.get(key)
            if found is None or found.version != version or time.monotonic() - found.at > max_age_s:
                return None
            self._checks.move_to_end(key)
            return found.result

    def remember(self, key: tuple[str, str], version: int, at: float, result: Freshness) -> None:
        with self._lock:
            self._checks[key] = _Remembered(version, at, result)
            self._checks.move_to_end(key)
            while len(self._checks) > REMEMBERED_CHECKS:
                self._checks.popitem(last=False)


@cache
def _watcher() -> TreeWatcher:
    return TreeWatcher(WATCH_MAX_DIRS)


_MEMORY = CheckMemory()


class FreshnessChecker:
    """Compares a snapshot's recorded source with the source now."""

    def __init__(self, config: FreshnessConfig) -> None:
        self.config = config

    def check(self, manifest: Manifest, files: Callable[[], FileBlobs]) -> Freshness:
        """`files` loads the snapshot's blob shas; it is only called when some path may have changed."""
        start = time.perf_counter()
        record = SourceRecord.from_dict(manifest.source)
        result = Freshness(repo=manifest.repo, snapshot_id=manifest.snapshot_id, commit=manifest.built_commit,
                           built_at=manifest.created, dirty=manifest.built_dirty)
        if record is None:
            result.reason = "the snapshot recorded no source (built before freshness tracking); re-index it"
        else:
            result.source, result.path, result.ref, result.branch = record.kind, record.path, record.ref, record.branch
            if not Path(record.path).is_dir():
                result.reason = f"source path {record.path} is not reachable from here"
            else:
                try:
                    if SourceKind.parse(record.kind) is SourceKind.WORKTREE:
                        result = self._watched_worktree(manifest.snapshot_id, record, files, result)
                    else:
                        self._git(record, files, result)
                except (GitError, ValueError) as exc:
                    result.stale, result.reason = None, f"cannot check: {exc}"
        result.check_ms = round((time.perf_counter() - start) * 1000, 3)
        return result

    def _watched_worktree(self, snapshot_id: str, record: SourceRecord, files: Callable[[], FileBlobs],
                          result: Freshness) -> Freshness:
        """The last check, when the tree is watched and nothing changed under it since that check began; else
        `result` filled by a git check (remembered when it succeeds)."""
        version = _watcher().version(record.path) if self.config.watch_max_age_s > 0 else None
        key = (snapshot_id, record.path)
        if version is not None:
            reused = _MEMORY.reusable(key, version, self.config.watch_max_age_s)
            if reused is not None:
                return replace(reused, checked_by=CHECKED_BY_WATCH)
        started = time.monotonic()
        self._worktree(record, files, result)
        if version is not None:
            _MEMORY.remember(key, version, started, replace(result))
        return result

    def _worktree(self, record: SourceRecord, files: Callable[[], FileBlobs], result: Freshness) -> None:
        timeout = self.config.git_timeout_s
        status = git_status(record.path, timeout)
        result.current_commit, result.current_branch = status.head, status.branch
        candidates = set(status.changed) | set(record.dirty)
        moved = status.head != record.commit
        if moved:
            try:
                candidates |= set(diff_paths(record.path, record.commit, status.head, timeout))
            except GitError:
                result.stale = True
                result.reason = (f"HEAD moved from {record.commit[:12] or '(no commit)'} to {status.head[:12]}, and the "
                                 "snapshot's commit is gone from the repository; re-index")
                return
        changes = FileChanges()
        if candidates:
            snapshot = files()
            root = Path(record.path)
            now = {p: worktree_blob(root / p) for p in candidates if p not in snapshot.skipped}
            changes = compare_blobs(snapshot.blobs, now, record.indexable.accepts)
        head_note = ""
        if moved:
            head_note = (f"HEAD moved from {record.commit[:12] or '(no commit)'}"
                         f"{' (' + record.branch + ')' if record.branch else ''} to {status.head[:12]}"
                         f"{' (' + status.branch + ')' if status.branch else ''}")
        self._report(result, changes, head_note)

    def _git(self, record: SourceRecord, files: Callable[[], FileBlobs], result: Freshness) -> None:
        timeout = self.config.git_timeout_s
        ref = record.ref or record.commit
        if len(ref) == 40 and set(ref) <= HEX:
            result.current_commit = ref
            result.stale, result.reason = False, "pinned to a commit"
            return
        now = resolve_commit(record.path, ref, timeout)
        result.current_commit = now
        if now == record.commit:
            self._report(result, FileChanges(), "")
            return
        out = run_git(record.path, ["diff", "--raw", "-z", "--no-renames", "--no-abbrev", record.commit, now], timeout)
        fields = [f.decode("utf-8", "surrogateescape") for f in out.split(b"\0")]
        current: dict[str, str | None] = {}
        for meta, path in zip(fields[0::2], fields[1::2]):
            parts = meta.split()
            if len(parts) >= 5:
                current[path] = None if parts[4] == "D" else parts[3]
        snapshot = files()
        changes = compare_blobs(snapshot.blobs, {p: s for p, s in current.items() if p not in snapshot.skipped},
                                record.indexable.accepts)
        self._report(result, changes, f"ref {ref} moved from {record.commit[:12]} to {now[:12]}")

    def _report(self, result: Freshness, changes: FileChanges, head_note: str) -> None:
        result.changed = changes.listed(self.config.max_listed)
        result.changed_count = changes.count
        result.stale = changes.count > 0
        if changes.count:
            result.reason = f"{changes.count} indexed file(s) changed since the snapshot ({changes.summary()})"
            if head_note:
                result.reason = f"{head_note}; {result.reason}"
        elif head_note:
            result.reason = f"{head_note}, but every indexed file is unchanged"
        else:
            result.reason = ""

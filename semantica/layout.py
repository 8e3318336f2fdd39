"""The on-disk index layout: where each repository's snapshots live, how a build is locked and published, and
how the published ones are listed and opened. Inside a snapshot: `semantica.ondisk.snapshot_paths`.

```
<root>/<repo-dir>/CURRENT                 the published snapshot id (replaced atomically)
<root>/<repo-dir>/<snapshot>/             one immutable snapshot (semantica.ondisk.snapshot_paths)
<root>/<repo-dir>/<snapshot>.tmp/         a build in progress; never read
<root>/<repo-dir>/<snapshot>.lock          flock held while that build runs (free = the build died)
<root>/<repo-dir>/.publish.lock           one publish (rename, CURRENT, prune) per repository at a time
```
A reader resolves CURRENT once and then reads one immutable directory, so it never sees a
half-written snapshot; indexing builds into `.tmp`, verifies, renames, then moves CURRENT. Shards are
partitioned by path and named by their content key (`semantica.stores.index_kinds.sharding`): a shard the previous snapshot
already holds is a hard link to its files, so snapshots stay self-contained and pruning one never
touches another's data. A branch publishes under its own key (`semantica.ondisk.branch_keys`).

Repository directories: `repo_dir_name` (`semantica.ondisk.repo_names`) is the one reversible, collision-free
mapping of a name to a directory: `%` -> `%25`, `+` -> `%2B`, then `/` -> `+` (`a/b` -> `a+b`, `a+b` -> `a%2Bb`).
Names without `+` or `%` keep the directory the old mapping (`/` -> `+` only) gave them, so those
snapshots are read as they are. A directory of the old mapping whose manifest names another
repository (`a+b` stored in `a+b/`) is served under its manifest's name, never under the name its
directory decodes to, and is moved to its new directory before anything else is built there.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import shutil
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from semantica.config import IndexConfig
from semantica.errors import path_exists, public_message
from semantica.ondisk.build_lock import BuildLock, SnapshotPin, exclusive, removal_lock
from semantica.ondisk.layout_errors import BrokenSnapshotError, LayoutError, UnknownRepoError
from semantica.ondisk.repo_names import RepoNameError, legacy_repo_dir_name, normalize_repo_name, repo_dir_name, repo_from_dir_name
from semantica.ondisk.snapshot_paths import MANIFEST, SnapshotPaths
from semantica.schema import Manifest

CURRENT = "CURRENT"
TMP_SUFFIX = ".tmp"
LOCK_SUFFIX = ".lock"
PUBLISH_LOCK = ".publish.lock"
log = logging.getLogger(__name__)


def new_snapshot_id(commit: str) -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%f")  # sortable: pruning keeps the newest
    return f"{stamp}-{(commit or 'worktree')[:10]}-{uuid.uuid4().hex[:6]}"


class RepoState(str, Enum):
    """Whether a repository's published snapshot can answer."""

    OK = "ok"
    BROKEN = "broken"


@dataclass
class RepoEntry:
    """One repository directory as the listing sees it; `error` is short and path-free."""

    repo: str
    directory: str
    state: RepoState
    snapshot_id: str = ""
    manifest: Manifest | None = None
    error: str = ""
    damaged: list[str] = field(default_factory=list)  # the snapshot's tables that cannot be read (relative paths)

    def to_dict(self) -> dict[str, Any]:
        m = self.manifest
        return {"repo": self.repo, "status": self.state.value, "snapshot": self.snapshot_id,
                "commit": m.built_commit if m else "", "dirty": m.built_dirty if m else False,
                "created": m.created if m else "",
                "counts": m.counts if m else {}, "model": m.model_id if m else "", "error": self.error,
                "damaged_tables": list(self.damaged)}


class IndexLayout:
    """Creates, publishes, lists and opens snapshots under one index root."""

    def __init__(self, root: str | os.PathLike[str], stale_build_s: float | None = None) -> None:
        self.root = Path(root).expanduser()
        self.stale_build_s = IndexConfig().stale_build_s if stale_build_s is None else stale_build_s
        self._build_locks: dict[str, BuildLock] = {}
        self._pointers: dict[Path, tuple[tuple[int, int, int, int], str]] = {}  # CURRENT -> (its stat, the id)

    def repo_dir(self, repo: str) -> Path:
        return self.root / repo_dir_name(repo)

    # -- building ------------------------------------------------------------------------------

    def begin(self, repo: str, commit: str) -> tuple[str, SnapshotPaths]:
        """A fresh, locked `<snapshot>.tmp` directory to build into (stale ones are removed first)."""
        name = normalize_repo_name(repo)
        repo_dir = self.repo_dir(name)
        self._move_legacy_aside(name, repo_dir)
        repo_dir.mkdir(parents=True, exist_ok=True)
        self.remove_stale_builds(repo_dir)
        snapshot_id = new_snapshot_id(commit)
        lock = BuildLock(repo_dir / f"{snapshot_id}{LOCK_SUFFIX}")
        lock.acquire()
        tmp = repo_dir / f"{snapshot_id}{TMP_SUFFIX}"
        try:
            tmp.mkdir(exist_ok=False)
        except BaseException:
            lock.release()
            raise
        self._build_locks[snapshot_id] = lock
        return snapshot_id, SnapshotPaths(tmp)

    def _move_legacy_aside(self, name: str, repo_dir: Path) -> None:
        """`repo_dir` may hold another repository under the old mapping (`a+b` in `a+b/` when `a/b`
        is indexed): move it to its own directory so this build cannot replace it."""
        try:
            if not path_exists(repo_dir / CURRENT):
                return
            held = normalize_repo_name(SnapshotPaths(repo_dir / _read_pointer(repo_dir)).read_manifest().repo)
        except Exception:  # unreadable: this build replaces whatever is broken there
            return
        if held == name:
            return
        target = self.repo_dir(held)
        if target.exists():
            raise LayoutError(f"directory {repo_dir.name!r} holds {held!r} under the old name mapping and "
                              f"{target.name!r} exists too; remove the older of the two, then index {name!r}")
        with contextlib.suppress(FileNotFoundError):  # another build moved it first
            os.rename(repo_dir, target)
            log.warning("moved %r (old name mapping) to %r before indexing %r", repo_dir.name, target.name, name)

    def remove_stale_builds(self, repo_dir: Path) -> list[str]:
        """Remove `.tmp` builds no live process holds (their lock is free, or they predate locks and
        are older than `index.stale_build_s`), abandoned CURRENT pointer files and orphan locks."""
        removed: list[str] = []
        if not repo_dir.is_dir():
            return removed
        now = time.time()
        for path in list(repo_dir.iterdir()):
            name = path.name
            if path.is_dir() and name.endswith(TMP_SUFFIX):
                lock = repo_dir / (name.removesuffix(TMP_SUFFIX) + LOCK_SUFFIX)
                if lock.exists():
                    stale = not BuildLock.is_held(lock)
                else:
                    stale = now - _mtime(path, now) > self.stale_build_s
                if stale:
                    shutil.rmtree(path, ignore_errors=True)
                    with contextlib.suppress(FileNotFoundError):
                        lock.unlink()
                    removed.append(name)
            elif name.startswith(f"{CURRENT}.") and name.endswith(TMP_SUFFIX):
                if now - _mtime(path, now) > self.stale_build_s:
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
                    removed.append(name)
            elif name.endswith(LOCK_SUFFIX) and not (repo_dir / (name.removesuffix(LOCK_SUFFIX) + TMP_SUFFIX)).exists():
                if not BuildLock.is_held(path):
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
        if removed:
            log.info("removed stale builds in %s: %s", repo_dir.name, removed)
        return removed

    def publish(self, repo: str, snapshot_id: str, keep: int, trusted: Mapping[str, str] | None = None) -> Path:
        """Verify the `.tmp` build, rename it into place, move CURRENT atomically, drop old ones.

        One publish per repository at a time (a lock file): a concurrent build's pruning never
        removes a snapshot another build is about to point CURRENT at."""
        repo_dir = self.repo_dir(repo)
        tmp = repo_dir / f"{snapshot_id}{TMP_SUFFIX}"
        with exclusive(repo_dir / PUBLISH_LOCK):
            SnapshotPaths(tmp).verify(trusted)
            final = repo_dir / snapshot_id
            os.rename(tmp, final)
            pointer_tmp = repo_dir / f"{CURRENT}.{uuid.uuid4().hex}{TMP_SUFFIX}"
            pointer_tmp.write_text(snapshot_id + "\n")
            os.replace(pointer_tmp, repo_dir / CURRENT)
            self._release(snapshot_id)
            self._prune(repo_dir, snapshot_id, keep)
        return final

    def _prune(self, repo_dir: Path, current: str, keep: int) -> None:
        """Keep `keep` published snapshots: CURRENT and the newest others; remove stale temp dirs.
        A snapshot a live build is linking from (`pin_current`) stays until a later publish."""
        published = sorted(
            (p for p in repo_dir.iterdir() if p.is_dir() and (p / MANIFEST).exists() and not p.name.endswith(TMP_SUFFIX)),
            key=lambda p: p.name,
        )
        others = [p for p in published if p.name != current]  # CURRENT may be older than a superseded build
        for old in others[: max(0, len(others) - (max(keep, 1) - 1))]:
            with removal_lock(old) as removable:
                if removable:
                    shutil.rmtree(old, ignore_errors=True)
                else:
                    log.info("snapshot %s/%s is pinned by a build; a later publish removes it", repo_dir.name, old.name)
        self.remove_stale_builds(repo_dir)

    @contextlib.contextmanager
    def pin_current(self, repo: str) -> Iterator[SnapshotPaths | None]:
        """The published snapshot of `repo`, pinned against retention for the block (None: there is
        none, it is unreadable, or it was pruned before the pin took hold)."""
        try:
            paths = self.current(repo)
        except LayoutError:
            yield None
            return
        pin = SnapshotPin(paths.root)
        try:
            pinned = pin.acquire() and path_exists(paths.manifest)  # pruned between CURRENT and the pin
            yield paths if pinned else None
        finally:
            pin.release()

    def discard(self, repo: str, snapshot_id: str) -> None:
        """Remove a failed build."""
        shutil.rmtree(self.repo_dir(repo) / f"{snapshot_id}{TMP_SUFFIX}", ignore_errors=True)
        self._release(snapshot_id)

    def _release(self, snapshot_id: str) -> None:
        lock = self._build_locks.pop(snapshot_id, None)
        if lock is not None:
            lock.release()

    # -- reading -------------------------------------------------------------------------------

    def current(self, repo: str) -> SnapshotPaths:
        """The published snapshot of `repo`: its own directory, else an old-layout directory whose
        manifest names it. UnknownRepoError when there is none; BrokenSnapshotError when unreadable."""
        name = normalize_repo_name(repo)
        own = self.repo_dir(name)
        legacy = self.root / legacy_repo_dir_name(name)
        try:
            snapshot_id = self._pointer(own)
            if snapshot_id is not None:
                return SnapshotPaths(own / snapshot_id)
            snapshot_id = self._pointer(legacy) if legacy != own else None
            if snapshot_id is not None:
                paths = SnapshotPaths(legacy / snapshot_id)
                if normalize_repo_name(paths.read_manifest().repo) == name:
                    return paths
        except (OSError, ValueError, LayoutError) as exc:
            log.warning("cannot resolve the snapshot of %r", name, exc_info=True)
            raise BrokenSnapshotError(f"repository {name!r}: {public_message(exc)}") from exc
        raise UnknownRepoError(name, self.repos())

    def _pointer(self, repo_dir: Path) -> str | None:
        """The snapshot id CURRENT names (None: no CURRENT), read again only when the file's stat changed: a
        publish replaces the file (a new inode), so a query pays one stat instead of an open and a read."""
        pointer = repo_dir / CURRENT
        try:
            stat = os.stat(pointer)
        except (FileNotFoundError, NotADirectoryError):
            return None
        key = (stat.st_dev, stat.st_ino, stat.st_mtime_ns, stat.st_size)
        cached = self._pointers.get(pointer)
        if cached is not None and cached[0] == key:
            return cached[1]
        snapshot_id = _read_pointer(repo_dir)
        self._pointers[pointer] = (key, snapshot_id)
        return snapshot_id

    def current_id(self, repo: str) -> str:
        return self.current(repo).root.name

    def listing(self) -> list[RepoEntry]:
        """Every repository directory with a CURRENT pointer, readable or not (then with its error)."""
        if not self.root.exists():
            return []
        entries = [entry for path in sorted(self.root.iterdir()) if (entry := self._entry(path)) is not None]
        served = {e.repo for e in entries if e.state is RepoState.OK and e.directory == repo_dir_name(e.repo)}
        for entry in entries:  # an old-layout copy whose repository was re-indexed into its own directory
            if entry.state is RepoState.OK and entry.directory != repo_dir_name(entry.repo) and entry.repo in served:
                entry.state = RepoState.BROKEN
                entry.error = (f"old-layout copy in directory {entry.directory!r}, superseded by a newer index "
                               f"of {entry.repo!r}; remove that directory")
        return entries

    def _entry(self, path: Path) -> RepoEntry | None:
        try:
            guess = repo_from_dir_name(path.name)
        except RepoNameError:
            guess = path.name
        snapshot_id = ""
        try:
            if not path.is_dir() or not path_exists(path / CURRENT):
                return None
            snapshot_id = _read_pointer(path)
            snapshot = path / snapshot_id
            if not snapshot.is_dir():
                return RepoEntry(guess, path.name, RepoState.BROKEN, snapshot_id,
                                 error=f"CURRENT names snapshot {snapshot_id!r}, which does not exist")
            manifest = SnapshotPaths(snapshot).read_manifest()
        except Exception as exc:
            log.warning("repository directory %s is unreadable", path, exc_info=True)
            return RepoEntry(guess, path.name, RepoState.BROKEN, snapshot_id, error=public_message(exc))
        try:
            held = normalize_repo_name(manifest.repo)
        except RepoNameError as exc:
            return RepoEntry(guess, path.name, RepoState.BROKEN, snapshot_id, manifest, public_message(exc))
        if path.name not in (repo_dir_name(held), legacy_repo_dir_name(held)):
            return RepoEntry(guess, path.name, RepoState.BROKEN, snapshot_id, manifest,
                             f"manifest names repository {held!r}, which does not belong in directory {path.name!r}")
        return RepoEntry(held, path.name, RepoState.OK, snapshot_id, manifest)

    def repos(self) -> list[str]:
        """Repositories whose published snapshot can be opened."""
        return sorted({e.repo for e in self.listing() if e.state is RepoState.OK})


def _read_pointer(repo_dir: Path) -> str:
    snapshot_id = (repo_dir / CURRENT).read_text().strip()
    if not snapshot_id or "/" in snapshot_id or snapshot_id in (".", ".."):
        raise LayoutError(f"CURRENT of {repo_dir.name!r} holds no snapshot id")
    return snapshot_id


def _mtime(path: Path, default: float) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return default



"""Has a working tree changed since the last freshness check? Linux's inotify says so without running git.

A freshness check of a working tree runs `git status`, which stats every tracked file and lists every directory
for untracked ones: a few milliseconds on a small repository, tens to hundreds on a large one, on every answer.
`TreeWatcher` keeps one inotify instance for the process with a watch on every directory of each tree it is asked
about (`.git/objects` aside) and a change counter per tree. Reading the queued events is exact: the kernel queues
an event inside the write, rename or delete that causes it, so a change made before a check starts is read by
that check. `FreshnessChecker` re-runs git only when a tree's counter moved, and at least every `max_age_s`, for
edits that inotify does not see (a network filesystem written from another machine).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

GIT_DIR = ".git"
GIT_SKIPPED = frozenset({"objects", "logs", "lfs", "hooks", "modules", "worktrees"})  # not what this tree's status reads


@dataclass(eq=False)  # one per watched root: compared by identity
class _Tree:
    root: str
    version: int = 0
    directories: dict[int, str] = field(default_factory=dict)  # watch descriptor -> directory


class TreeWatcher:
    """Per-tree change counters over one inotify instance (`version(root)`); None where a tree cannot be
    watched (not Linux, no `.git` directory, more than `max_dirs` directories, or the kernel's watch limit)."""

    def __init__(self, max_dirs: int) -> None:
        self.max_dirs = max_dirs
        self._pid = os.getpid()  # a forked child shares the event queue: it checks with git instead
        self._lock = threading.Lock()
        self._trees: dict[str, _Tree | None] = {}
        self._asked: set[str] = set()
        self._by_descriptor: dict[int, list[_Tree]] = {}  # a directory in two watched trees (a nested clone) counts for both
        self._inotify = None
        self._flags = None
        try:
            import inotify_simple

            self._inotify = inotify_simple.INotify()
            self._flags = inotify_simple.flags
        except (ImportError, OSError) as exc:  # not Linux, or the process's inotify instances are used up
            log.info("working trees are checked with git on every answer: %s", exc)

    @property
    def _mask(self) -> int:
        f = self._flags
        return (f.MODIFY | f.CLOSE_WRITE | f.CREATE | f.DELETE | f.MOVED_FROM | f.MOVED_TO | f.DELETE_SELF
                | f.MOVE_SELF)

    def version(self, root: str) -> int | None:
        """The tree's change counter after every queued event is read; None the first time a process asks (a
        one-answer CLI never pays for the watches), watched from the second."""
        if self._inotify is None or os.getpid() != self._pid:
            return None
        with self._lock:
            self._drain()
            if root not in self._asked:
                self._asked.add(root)
                return None
            if root not in self._trees:
                self._trees[root] = self._watch(root)
            tree = self._trees[root]
            return None if tree is None else tree.version

    def _watch(self, root: str) -> _Tree | None:
        if not (Path(root) / GIT_DIR).is_dir():  # a linked worktree or submodule: its HEAD lives elsewhere
            return None
        tree = _Tree(root)
        try:
            self._add_tree(tree, root)
        except (OSError, _TooManyDirectories) as exc:
            log.info("%s is checked with git on every answer: %s", root, exc)
            self._forget(tree)
            return None
        return tree

    def _add_tree(self, tree: _Tree, top: str) -> None:
        """Watches on `top` and every directory below it (inside `.git`, the part git status reads)."""
        for directory, subdirs, _ in os.walk(top):
            relative = os.path.relpath(directory, tree.root)
            if relative == GIT_DIR:
                subdirs[:] = [d for d in subdirs if d not in GIT_SKIPPED]
            if len(tree.directories) >= self.max_dirs:
                raise _TooManyDirectories(f"over {self.max_dirs} directories")
            descriptor = self._inotify.add_watch(directory, self._mask)
            tree.directories[descriptor] = directory
            holders = self._by_descriptor.setdefault(descriptor, [])
            if tree not in holders:
                holders.append(tree)

    def _drain(self) -> None:
        """Read every queued event: count it for its tree, and watch a directory created or moved in."""
        for event in self._inotify.read(timeout=0):
            if event.mask & self._flags.Q_OVERFLOW:  # events were lost: every tree starts over
                self._restart()
                return
            for tree in list(self._by_descriptor.get(event.wd, ())):
                self._count(tree, event)

    def _count(self, tree: _Tree, event) -> None:  # noqa: ANN001 - an inotify_simple Event
        tree.version += 1
        if event.mask & self._flags.IGNORED:
            tree.directories.pop(event.wd, None)
            self._by_descriptor.pop(event.wd, None)
        elif event.mask & self._flags.ISDIR and event.mask & (self._flags.CREATE | self._flags.MOVED_TO):
            parent = tree.directories.get(event.wd)
            if parent is not None and not _inside_skipped_git(tree.root, os.path.join(parent, event.name)):
                try:
                    self._add_tree(tree, os.path.join(parent, event.name))
                except (OSError, _TooManyDirectories):
                    self._trees[tree.root] = None  # no longer fully watched: git on every answer
                    self._forget(tree)

    def _restart(self) -> None:
        roots = [root for root, tree in self._trees.items() if tree is not None]
        for root in roots:
            self._forget(self._trees[root])
        self._trees = {}
        for root in roots:
            tree = self._watch(root)
            if tree is not None:
                tree.version = int(time.time_ns())  # never equal to a version recorded before the restart
            self._trees[root] = tree

    def _forget(self, tree: _Tree | None) -> None:
        if tree is None:
            return
        for descriptor in list(tree.directories):
            holders = [t for t in self._by_descriptor.pop(descriptor, []) if t is not tree]
            if holders:  # another watched tree holds this directory too: its watch stays
                self._by_descriptor[descriptor] = holders
                continue
            try:
                self._inotify.rm_watch(descriptor)
            except OSError:
                pass  # the directory is gone: its watch went with it
        tree.directories.clear()


class _TooManyDirectories(Exception):
    pass


def _inside_skipped_git(root: str, directory: str) -> bool:
    parts = Path(os.path.relpath(directory, root)).parts
    return len(parts) >= 2 and parts[0] == GIT_DIR and parts[1] in GIT_SKIPPED

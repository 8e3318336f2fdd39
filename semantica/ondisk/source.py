"""What a snapshot was built from, and git's view of a source now.

A snapshot records its source (`Manifest.source`: kind, path, ref, commit, branch, the paths that were
dirty at build time, and which file names its indexer takes) plus every indexed file's blob sha in
`files.parquet`. The freshness check (`semantica.ondisk.freshness`) compares that record with git's state.
Both the indexer (`pipelines/`) and the query side (`serving/`) use this module.
"""

from __future__ import annotations

import enum
import fnmatch
import hashlib
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from semantica.errors import ErrorKind

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's sha of the empty tree (diff base of a repo with no commits)
READ_BLOCK = 1 << 16
FILES_ARROW_SCHEMA = pa.schema([("path", pa.string()), ("blob_sha", pa.string()), ("skipped", pa.bool_())])


class SourceKind(enum.Enum):
    """A working tree (files on disk) or a git ref/commit read from git objects."""

    WORKTREE = "worktree"
    GIT = "git"

    @staticmethod
    def parse(value: str) -> SourceKind:
        try:
            return SourceKind(value)
        except ValueError:
            valid = ", ".join(k.value for k in SourceKind)
            raise ValueError(f"unknown source kind {value!r}; valid: {valid}") from None


class GitError(RuntimeError):
    """git could not answer (not a repository, unknown ref, timeout)."""

    error_kind = ErrorKind.INVALID


def printable_path(path: str) -> str:
    """`path` as UTF-8 text: a name git gave as non-UTF-8 bytes (held as surrogate escapes) shows them as `\\xNN`,
    so a report, a cache key or a table never has to encode a surrogate."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


@dataclass
class IndexableRule:
    """Which new paths the indexer would take (recorded at build time so the check needs no `pipelines`)."""

    suffixes: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    vendored_dirs: list[str] = field(default_factory=list)
    include_globs: list[str] = field(default_factory=list)

    def accepts(self, path: str) -> bool:
        if printable_path(path) != path:  # a name that is not UTF-8: discovery skips it by name
            return False
        parts = path.split("/")
        if any(part in self.vendored_dirs for part in parts[:-1]):
            return False
        name = parts[-1]
        if self.include_globs and not any(fnmatch.fnmatchcase(path, g) or fnmatch.fnmatchcase(name, g)
                                          for g in self.include_globs):
            return False
        suffix = PurePosixPath(name.lower()).suffix
        return name in self.names or (bool(suffix) and suffix in self.suffixes)


@dataclass
class SourceRecord:
    """`Manifest.source`: enough to tell later whether the source moved on."""

    kind: str  # SourceKind value
    path: str
    ref: str = ""  # the ref the snapshot follows ("" for a working tree: HEAD)
    commit: str = ""  # the commit indexed (git) or HEAD when the working tree was read
    branch: str = ""  # branch checked out (worktree) or followed (git), "" when detached
    dirty: list[str] = field(default_factory=list)  # worktree paths that differed from `commit` at build time
    indexable: IndexableRule = field(default_factory=IndexableRule)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(values: dict[str, Any]) -> SourceRecord | None:
        if not values:
            return None
        data = dict(values)
        data["indexable"] = IndexableRule(**data.get("indexable", {}))
        return SourceRecord(**data)


@dataclass
class GitStatus:
    """`git status` of a working tree: HEAD, its branch and the paths that differ from HEAD."""

    head: str
    branch: str
    changed: list[str]


def run_git(path: str, args: list[str], timeout_s: float) -> bytes:
    """git's stdout; GitError with git's message on failure."""
    try:
        done = subprocess.run(["git", "--no-optional-locks", "-C", path, *args], capture_output=True,
                              timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0]} in {path} took over {timeout_s}s") from None
    except OSError as exc:
        raise GitError(f"cannot run git: {exc}") from None
    if done.returncode != 0:
        raise GitError(f"git {' '.join(args[:2])} in {path}: {done.stderr.decode('utf-8', 'replace').strip()}")
    return done.stdout


def git_status(path: str, timeout_s: float) -> GitStatus:
    """One `git status` (index stat data, no re-hash of clean files): HEAD, branch, changed paths."""
    out = run_git(path, ["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all", "--no-renames"],
                  timeout_s)
    head = branch = ""
    changed: list[str] = []
    for record in out.split(b"\0"):
        if not record:
            continue
        text = record.decode("utf-8", "surrogateescape")
        if text.startswith("# branch.oid "):
            oid = text.removeprefix("# branch.oid ")
            head = "" if oid == "(initial)" else oid
        elif text.startswith("# branch.head "):
            name = text.removeprefix("# branch.head ")
            branch = "" if name == "(detached)" else name
        elif text.startswith("1 "):
            changed.append(text.split(" ", 8)[8])
        elif text.startswith("u "):
            changed.append(text.split(" ", 10)[10])
        elif text.startswith("? "):
            changed.append(text[2:])
    return GitStatus(head=head, branch=branch, changed=changed)


def resolve_commit(path: str, ref: str, timeout_s: float) -> str:
    return run_git(path, ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], timeout_s).decode().strip()


def diff_paths(path: str, old: str, new: str, timeout_s: float) -> list[str]:
    """Paths that differ between two commits (`old` "" = the empty tree)."""
    out = run_git(path, ["diff", "--name-only", "-z", "--no-renames", old or EMPTY_TREE, new], timeout_s)
    return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]


def worktree_blob(full: Path) -> str | None:
    """git's blob sha of a file on disk (None when it is gone or not a regular file)."""
    try:
        if full.is_symlink() or not full.is_file():
            return None
        digest = hashlib.sha1(b"blob %d\0" % full.stat().st_size)
        with open(full, "rb") as handle:
            for block in iter(lambda: handle.read(READ_BLOCK), b""):
                digest.update(block)
        return digest.hexdigest()
    except OSError:
        return None


def write_file_blobs(path: Path, files: dict[str, str], skipped: list[str]) -> None:
    """`files.parquet`: every indexed file's blob sha, and the paths skipped at discovery."""
    rows = [{"path": p, "blob_sha": s, "skipped": False} for p, s in sorted(files.items())]
    rows += [{"path": p, "blob_sha": "", "skipped": True} for p in sorted(set(skipped) - set(files))]
    pq.write_table(pa.Table.from_pylist(rows, schema=FILES_ARROW_SCHEMA), path)


@dataclass
class FileBlobs:
    """A snapshot's `files.parquet`, read: path -> blob sha, and the skipped paths."""

    blobs: dict[str, str]
    skipped: set[str]

    @staticmethod
    def read(path: Path) -> FileBlobs:
        if not path.exists():
            return FileBlobs({}, set())
        table = pq.ParquetFile(path).read().to_pydict()  # not read_table: pyarrow.dataset imports pandas
        blobs = {p: s for p, s, k in zip(table["path"], table["blob_sha"], table["skipped"]) if not k}
        return FileBlobs(blobs, {p for p, k in zip(table["path"], table["skipped"]) if k})


@dataclass
class FileChanges:
    """Files that differ between a snapshot and its source now."""

    edited: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    renamed: list[str] = field(default_factory=list)  # "old -> new" (same content, new path)

    @property
    def count(self) -> int:
        return len(self.edited) + len(self.added) + len(self.deleted) + len(self.renamed)

    def summary(self) -> str:
        parts = [f"{name} {len(items)}" for name, items in
                 (("edited", self.edited), ("added", self.added), ("deleted", self.deleted), ("renamed", self.renamed))
                 if items]
        return ", ".join(parts)

    def listed(self, limit: int) -> dict[str, list[str]]:
        return {"edited": self.edited[:limit], "added": self.added[:limit], "deleted": self.deleted[:limit],
                "renamed": self.renamed[:limit]}


def compare_blobs(old: dict[str, str], new: dict[str, str | None], accepts: Any = None) -> FileChanges:
    """Classify paths by blob sha: `old` = the snapshot's, `new` = now (None = gone). A deleted and an
    added path with the same blob are one rename. `accepts(path)` filters added paths the indexer skips."""
    changes = FileChanges()
    for path in sorted(new):
        before, after = old.get(path), new[path]
        if before == after:
            continue
        if before is None:
            if after is not None and (accepts is None or accepts(path)):
                changes.added.append(path)
        elif after is None:
            changes.deleted.append(path)
        else:
            changes.edited.append(path)
    by_blob = {new[p]: p for p in changes.added}
    for path in list(changes.deleted):
        target = by_blob.pop(old[path], None)
        if target is not None:
            changes.deleted.remove(path)
            changes.added.remove(target)
            changes.renamed.append(f"{path} -> {target}")
    return changes

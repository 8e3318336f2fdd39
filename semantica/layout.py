"""The on-disk index layout, the only code that knows where things live.

```
<root>/<repo-dir>/CURRENT                 the published snapshot id (replaced atomically)
<root>/<repo-dir>/<snapshot>/manifest.json
                             chunks.parquet symbols.parquet edges.parquet errors.parquet pagerank.parquet files.parquet
                             vectors/shard-000.faiss vectors/shard-000.ids.npy
                             lucene/shard-000/
<root>/<repo-dir>/<snapshot>.tmp/         a build in progress; never read
```
A reader resolves CURRENT once and then reads one immutable directory, so it never sees a
half-written snapshot; indexing builds into `.tmp`, verifies, renames, then moves CURRENT.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from semantica.schema import SCHEMA_VERSION, Manifest

MANIFEST = "manifest.json"
CURRENT = "CURRENT"
TMP_SUFFIX = ".tmp"
CHUNKS = "chunks.parquet"
SYMBOLS = "symbols.parquet"
EDGES = "edges.parquet"
ERRORS = "errors.parquet"
PAGERANK = "pagerank.parquet"
FILES = "files.parquet"
VECTORS_DIR = "vectors"
LUCENE_DIR = "lucene"
_HASH_BLOCK = 1 << 20


class LayoutError(RuntimeError):
    """The index directory is missing something or is inconsistent."""


class UnknownRepoError(LayoutError):
    """No published snapshot exists for the asked repository."""


def repo_dir_name(repo: str) -> str:
    """`owner/name` -> `owner+name` (one directory level, reversible)."""
    if not repo or repo.strip(".") == "" or "\x00" in repo:
        raise LayoutError(f"invalid repository name {repo!r}")
    return repo.replace("/", "+")


def repo_from_dir_name(name: str) -> str:
    return name.replace("+", "/")


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_HASH_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def directory_checksums(directory: Path) -> dict[str, str]:
    """sha256 of every file under `directory` but the manifest, by relative path."""
    sums: dict[str, str] = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file() and path.name != MANIFEST:
            sums[path.relative_to(directory).as_posix()] = file_sha256(path)
    return sums


def new_snapshot_id(commit: str) -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%f")  # sortable: pruning keeps the newest
    return f"{stamp}-{(commit or 'worktree')[:10]}-{uuid.uuid4().hex[:6]}"


@dataclass
class SnapshotPaths:
    """Paths inside one snapshot directory."""

    root: Path

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST

    @property
    def chunks(self) -> Path:
        return self.root / CHUNKS

    @property
    def symbols(self) -> Path:
        return self.root / SYMBOLS

    @property
    def edges(self) -> Path:
        return self.root / EDGES

    @property
    def errors(self) -> Path:
        return self.root / ERRORS

    @property
    def pagerank(self) -> Path:
        return self.root / PAGERANK

    @property
    def files(self) -> Path:
        """Every indexed file's blob sha (what the freshness check compares with the source)."""
        return self.root / FILES

    @property
    def vectors(self) -> Path:
        return self.root / VECTORS_DIR

    @property
    def lucene(self) -> Path:
        return self.root / LUCENE_DIR

    def read_manifest(self) -> Manifest:
        if not self.manifest.exists():
            raise LayoutError(f"{self.root} has no {MANIFEST}: not a finished snapshot")
        return Manifest.from_dict(json.loads(self.manifest.read_text()))

    def write_manifest(self, manifest: Manifest) -> None:
        tmp = self.manifest.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(manifest.to_dict(), indent=2, sort_keys=True))
        os.replace(tmp, self.manifest)


class IndexLayout:
    """Creates, publishes, lists and opens snapshots under one index root."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).expanduser()

    def repo_dir(self, repo: str) -> Path:
        return self.root / repo_dir_name(repo)

    def begin(self, repo: str, commit: str) -> tuple[str, SnapshotPaths]:
        """A fresh `<snapshot>.tmp` directory to build into."""
        snapshot_id = new_snapshot_id(commit)
        tmp = self.repo_dir(repo) / f"{snapshot_id}{TMP_SUFFIX}"
        tmp.mkdir(parents=True, exist_ok=False)
        return snapshot_id, SnapshotPaths(tmp)

    def verify(self, paths: SnapshotPaths) -> Manifest:
        """Check the manifest's schema version and every checksum; raise on any mismatch."""
        manifest = paths.read_manifest()
        if manifest.schema_version != SCHEMA_VERSION:
            raise LayoutError(
                f"{paths.root}: schema version {manifest.schema_version}, this build reads "
                f"{SCHEMA_VERSION}; re-index the repository"
            )
        actual = directory_checksums(paths.root)
        if actual != manifest.checksums:
            missing = sorted(set(manifest.checksums) - set(actual))
            changed = sorted(k for k in actual if manifest.checksums.get(k) != actual[k])
            raise LayoutError(f"{paths.root}: checksum mismatch (missing {missing[:5]}, differing {changed[:5]})")
        return manifest

    def publish(self, repo: str, snapshot_id: str, keep: int) -> Path:
        """Verify the `.tmp` build, rename it into place, move CURRENT atomically, drop old ones."""
        repo_dir = self.repo_dir(repo)
        tmp = repo_dir / f"{snapshot_id}{TMP_SUFFIX}"
        self.verify(SnapshotPaths(tmp))
        final = repo_dir / snapshot_id
        os.rename(tmp, final)
        pointer_tmp = repo_dir / f"{CURRENT}.{uuid.uuid4().hex}.tmp"
        pointer_tmp.write_text(snapshot_id + "\n")
        os.replace(pointer_tmp, repo_dir / CURRENT)
        self._prune(repo_dir, snapshot_id, keep)
        return final

    def _prune(self, repo_dir: Path, current: str, keep: int) -> None:
        """Keep the newest `keep` published snapshots (current always); remove stale temp dirs."""
        published = sorted(
            (p for p in repo_dir.iterdir() if p.is_dir() and (p / MANIFEST).exists() and not p.name.endswith(TMP_SUFFIX)),
            key=lambda p: p.name,
        )
        for old in published[: max(0, len(published) - max(keep, 1))]:
            if old.name != current:
                shutil.rmtree(old, ignore_errors=True)

    def discard(self, repo: str, snapshot_id: str) -> None:
        """Remove a failed build."""
        shutil.rmtree(self.repo_dir(repo) / f"{snapshot_id}{TMP_SUFFIX}", ignore_errors=True)

    def current(self, repo: str) -> SnapshotPaths:
        """The published snapshot of `repo`; UnknownRepoError when there is none."""
        pointer = self.repo_dir(repo) / CURRENT
        if not pointer.exists():
            known = ", ".join(self.repos()) or "none"
            raise UnknownRepoError(
                f"repository {repo!r} has no published snapshot under {self.root} (indexed: {known}); "
                f"run `semantica index --repo PATH --name {repo}`"
            )
        snapshot = self.repo_dir(repo) / pointer.read_text().strip()
        return SnapshotPaths(snapshot)

    def current_id(self, repo: str) -> str:
        return self.current(repo).root.name

    def repos(self) -> list[str]:
        """Repositories with a published snapshot."""
        if not self.root.exists():
            return []
        return sorted(repo_from_dir_name(p.name) for p in self.root.iterdir() if (p / CURRENT).exists())

    def manifests(self) -> list[Manifest]:
        return [self.current(repo).read_manifest() for repo in self.repos()]


# -- branches: one current snapshot per repository and branch -----------------------------------------
BRANCH_SEPARATOR = "@"


def branch_key(repo: str, branch: str | None) -> str:
    """The name a branch's snapshot is published under: `repo` for the default branch (the working tree
    or HEAD), `repo@branch` for any other, so each branch keeps its own CURRENT and retention."""
    if not branch:
        return repo
    if BRANCH_SEPARATOR in repo:
        raise LayoutError(f"repository name {repo!r} already names a branch; pass the bare repository name")
    return f"{repo}{BRANCH_SEPARATOR}{branch}"


def split_branch_key(key: str) -> tuple[str, str]:
    """`repo@branch` -> (repo, branch); `repo` -> (repo, "") (the default branch)."""
    repo, _, branch = key.partition(BRANCH_SEPARATOR)
    return repo, branch

"""Discover: which files of a repository snapshot get indexed, and their text.

A snapshot is either a commit (read from git objects, no checkout, so bare repositories work) or the
working tree (`git ls-files`, honouring .gitignore). Every skipped file is reported as a `FileError`
with a reason instead of silently disappearing. One file is read at a time so memory stays flat.
The two sources (git objects, working tree) share every skip rule here, so a file's verdict is the same
whichever way it was read.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path

from pipelines.ignore import IgnoreMatch, NestedIgnore, UnnamedIgnore, directory_of, git_ignored
from pipelines.source_files import NON_UTF8_NAME_REASON, Discovery, DiscoveryError, FileEntry, SourceFile
from semantica.config import DiscoverConfig
from semantica.errors import path_exists
from semantica.languages import language_of
from semantica.ondisk.source import printable_path
from semantica.schema import FileError

STAGE = "discover"
GIT_MODE_SYMLINK = "120000"
GIT_MODE_SUBMODULE = "160000"
READ_CHUNK_BYTES = 1 << 16
# https://host/owner/name(.git), ssh://git@host/owner/name, git@host:owner/name (not local paths).
_REMOTE_URL = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|[\w.-]+@[\w.-]+:)", re.I)

def _run_git(repo_path: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", repo_path, *args], capture_output=True, check=False)


def repo_name_from_path(repo_path: str) -> str:
    """`owner/name` from the origin remote URL, else the directory name.

    A trailing `repo` or `.git` component is skipped and a `.git` suffix dropped, so
    `/x/psf+requests/repo` -> `psf+requests` and `/x/flask.git` -> `flask`.
    """
    result = _run_git(repo_path, "config", "--get", "remote.origin.url")
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


class RepoSource:
    """Lists and reads the indexable files of one repository snapshot.

    `commit=None` reads the working tree (a bare repository has none, so it reads HEAD). A repository
    with no commits yields empty lists whether `commit` is None or "HEAD"; any other commit it does
    not know is a `DiscoveryError`.
    """

    def __init__(self, repo_path: str, commit: str | None, config: DiscoverConfig) -> None:
        self.config = config
        path = Path(repo_path)
        try:
            found = path_exists(path)
        except PermissionError:
            raise DiscoveryError(f"repository path {repo_path!r}: permission denied") from None
        if not found:
            raise DiscoveryError(f"repository path {repo_path!r} does not exist; pass a git checkout or bare clone")
        if not path.is_dir():
            raise DiscoveryError(f"repository path {repo_path!r} is not a directory; pass a git checkout or bare clone")
        self.repo_path = str(path.resolve())
        check = _run_git(self.repo_path, "rev-parse", "--is-bare-repository")
        if check.returncode != 0:
            detail = check.stderr.decode("utf-8", "replace").strip()
            raise DiscoveryError(
                f"{repo_path!r} is not a git repository ({detail}); run `git init` or clone it first"
            )
        self.bare = check.stdout.strip() == b"true"
        if not self.bare:
            top = _run_git(self.repo_path, "rev-parse", "--show-toplevel")
            toplevel = top.stdout.decode().strip() if top.returncode == 0 else ""
            if not toplevel:
                raise DiscoveryError(f"{repo_path!r} is a git directory, not a work tree; pass the repository root")
            if Path(toplevel).resolve() != Path(self.repo_path):
                raise DiscoveryError(
                    f"{repo_path!r} is inside the git repository {toplevel!r} but is not its root; "
                    "pass the repository root"
                )
        self.repo = repo_name_from_path(self.repo_path)
        self.empty = False
        self.commit: str | None = None
        if commit is None and not self.bare:
            return
        wanted = commit or "HEAD"
        resolved = _run_git(self.repo_path, "rev-parse", "--verify", "--quiet", f"{wanted}^{{commit}}")
        if resolved.returncode == 0:
            self.commit = resolved.stdout.decode().strip()
            return
        has_commits = _run_git(self.repo_path, "rev-list", "-n", "1", "--all").stdout.strip()
        if not has_commits and wanted == "HEAD":
            self.empty = True
            return
        raise DiscoveryError(
            f"commit {wanted!r} not found in {repo_path!r}; check the sha or branch name "
            "(`git log --oneline`) or fetch it first"
        )

    # -- listing -------------------------------------------------------------------------------

    def entries(self) -> tuple[list[FileEntry], list[FileError]]:
        """Files to index and files skipped (with why), sorted by path."""
        found = self._listing()
        return found.entries, found.errors

    def discover(self) -> Discovery:
        """`entries()` plus every ignored path with the rule that ignored it (what `semantica plan` shows)."""
        found = self._listing()
        if self.commit is None and not self.empty:
            found.ignored.extend(self._error(path, reason) for path, reason in git_ignored(self.repo_path))
            found.ignored.sort(key=lambda e: e.path)
        return found

    def _listing(self) -> Discovery:
        if self.empty:
            return Discovery([], [], [])
        if self.commit is not None:
            return self._tree_entries()
        return self._worktree_entries()

    def _ignored_by_rules(self, paths: list[str], files: dict[str, str]) -> dict[str, IgnoreMatch | UnnamedIgnore]:
        """Which `paths` the `.semanticaignore` files (path -> blob sha, or "" for the work tree) exclude."""
        texts: dict[str, bytes] = {}
        for path, sha in files.items():
            if sha:
                texts[directory_of(path)] = _run_git(self.repo_path, "cat-file", "blob", sha).stdout
                continue
            try:
                texts[directory_of(path)] = (Path(self.repo_path) / path).read_bytes()
            except OSError:
                continue
        return NestedIgnore(self.config.ignore_file, texts).match_all(paths)

    def _is_ignore_file(self, path: str) -> bool:
        return bool(self.config.ignore_file) and path.rsplit("/", 1)[-1] == self.config.ignore_file

    def _error(self, path: str, reason: str) -> FileError:
        return FileError(repo=self.repo, path=printable_path(path), stage=STAGE, reason=printable_path(reason))

    def _name_error(self, path: str) -> FileError | None:
        """A name that is not UTF-8 cannot be stored (caches, tables, JSON hold text): skipped with its reason,
        under its printable name, so every other file is still indexed and the report says which one and why."""
        if printable_path(path) == path:
            return None
        return self._error(path, f"{NON_UTF8_NAME_REASON} (rename it to index it)")

    def _path_reason(self, path: str) -> str:
        """Why `path` is skipped by name alone ("" when it is not)."""
        parts = path.split("/")
        vendored = set(self.config.vendored_dirs)
        for part in parts[:-1]:
            if part in vendored:
                return f"vendored directory {part!r}"
        lower = parts[-1].lower()
        for suffix in self.config.generated_suffixes:
            if lower.endswith(suffix.lower()):
                return f"generated file ({suffix})"
        if not language_of(path):
            return "unknown file type (extension not indexed)"
        return ""

    def _included(self, path: str) -> bool:
        """`discover.include_globs` ([] = all): files outside it are not candidates, not errors."""
        globs = self.config.include_globs
        name = path.rsplit("/", 1)[-1]
        return not globs or any(fnmatch.fnmatchcase(path, g) or fnmatch.fnmatchcase(name, g) for g in globs)

    def _size_reason(self, size: int) -> str:
        if size > self.config.max_file_bytes:
            return f"oversized ({size} bytes > max_file_bytes {self.config.max_file_bytes})"
        return ""

    def _tree_entries(self) -> Discovery:
        assert self.commit is not None
        listing = _run_git(self.repo_path, "ls-tree", "-r", "-l", "-z", "--full-tree", self.commit)
        if listing.returncode != 0:
            raise DiscoveryError(
                f"cannot list commit {self.commit} in {self.repo_path}: "
                f"{listing.stderr.decode('utf-8', 'replace').strip()}"
            )
        keep: list[FileEntry] = []
        errors: list[FileError] = []
        ignored: list[FileError] = []
        records = []
        for record in listing.stdout.split(b"\0"):
            if record:
                meta, _, raw_path = record.partition(b"\t")
                records.append((meta.decode().split(), raw_path.decode("utf-8", "surrogateescape")))
        rules = self._ignored_by_rules([path for _, path in records],
                                       {path: meta[2] for meta, path in records
                                        if self._is_ignore_file(path) and meta[0] != GIT_MODE_SYMLINK})
        for (mode, kind, sha, size_text), path in records:
            if not self._included(path):
                continue
            rule = rules.get(path)
            if rule is not None:
                ignored.append(self._error(path, rule.reason()))
                continue
            name_error = self._name_error(path)
            if name_error is not None:
                errors.append(name_error)
                continue
            if mode == GIT_MODE_SUBMODULE or kind == "commit":
                errors.append(self._error(path, "submodule"))
                continue
            if mode == GIT_MODE_SYMLINK:
                errors.append(self._error(path, "symlink"))
                continue
            if not size_text.isdigit():  # `ls-tree -l` prints "BAD" for a blob the object store lacks
                errors.append(self._error(path, f"blob {sha} missing from the repository (a partial clone?)"))
                continue
            reason = self._path_reason(path) or self._size_reason(int(size_text))
            if reason:
                errors.append(self._error(path, reason))
                continue
            keep.append(FileEntry(path=path, blob_sha=sha, size=int(size_text), language=language_of(path)))
        keep.sort(key=lambda e: e.path)
        return Discovery(keep, errors, ignored)

    def _worktree_entries(self) -> Discovery:
        listing = _run_git(self.repo_path, "ls-files", "-co", "--exclude-standard", "-z")
        if listing.returncode != 0:
            raise DiscoveryError(
                f"cannot list files of {self.repo_path}: {listing.stderr.decode('utf-8', 'replace').strip()}"
            )
        root = Path(self.repo_path)
        keep: list[FileEntry] = []
        errors: list[FileError] = []
        ignored: list[FileError] = []
        seen: set[str] = set()
        paths = [p.decode("utf-8", "surrogateescape") for p in listing.stdout.split(b"\0") if p]
        rules = self._ignored_by_rules(paths, {p: "" for p in paths
                                               if self._is_ignore_file(p) and not (root / p).is_symlink()})
        for path in paths:
            if path in seen or not self._included(path):
                continue
            seen.add(path)
            rule = rules.get(path)
            if rule is not None:
                ignored.append(self._error(path, rule.reason()))
                continue
            name_error = self._name_error(path)
            if name_error is not None:
                errors.append(name_error)
                continue
            full = root / path
            reason = self._path_reason(path)
            if reason:
                errors.append(self._error(path, reason))
                continue
            try:
                stat = full.lstat()
            except FileNotFoundError:
                errors.append(self._error(path, "missing from the working tree (deleted, not committed)"))
                continue
            if full.is_symlink():
                errors.append(self._error(path, self._symlink_reason(full)))
                continue
            if full.is_dir():
                errors.append(self._error(path, "submodule"))
                continue
            reason = self._size_reason(stat.st_size)
            if reason:
                errors.append(self._error(path, reason))
                continue
            keep.append(
                FileEntry(path=path, blob_sha=self._hash_file(full), size=stat.st_size, language=language_of(path))
            )
        keep.sort(key=lambda e: e.path)
        return Discovery(keep, errors, ignored)

    def _symlink_reason(self, full: Path) -> str:
        """Symlinks are never followed; say what kind it was."""
        target = os.path.realpath(full)
        if not os.path.exists(target):
            return "symlink (broken)"
        if os.path.commonpath([target, self.repo_path]) != self.repo_path:
            return "symlink (points outside the repository)"
        return "symlink"

    @staticmethod
    def _hash_file(full: Path) -> str:
        size = full.stat().st_size
        digest = hashlib.sha1(b"blob %d\0" % size)
        with open(full, "rb") as handle:
            for block in iter(lambda: handle.read(READ_CHUNK_BYTES), b""):
                digest.update(block)
        return digest.hexdigest()

    # -- reading -------------------------------------------------------------------------------

    def read(self, entries: Iterable[FileEntry]) -> Iterator[SourceFile | FileError]:
        """Decoded text of each entry, or a FileError saying why it is not indexed."""
        if self.commit is not None:
            yield from self._read_blobs(entries)
            return
        for entry in entries:
            yield self._read_worktree(entry)

    def _read_worktree(self, entry: FileEntry) -> SourceFile | FileError:
        full = Path(self.repo_path) / entry.path
        try:
            fd = os.open(full, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError as exc:
            return self._error(entry.path, f"cannot read: {exc.strerror}")
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(self.config.max_file_bytes + 1)
        if len(data) > self.config.max_file_bytes:
            return self._error(entry.path, self._size_reason(len(data)))
        return self._decode(entry, data)

    def _read_blobs(self, entries: Iterable[FileEntry]) -> Iterator[SourceFile | FileError]:
        """Stream blobs through one `git cat-file --batch`: one request, one answer at a time."""
        proc = subprocess.Popen(
            ["git", "-C", self.repo_path, "cat-file", "--batch"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        assert proc.stdin is not None and proc.stdout is not None
        try:
            for entry in entries:
                proc.stdin.write(entry.blob_sha.encode() + b"\n")
                proc.stdin.flush()
                header = proc.stdout.readline().split()
                if len(header) != 3:
                    yield self._error(entry.path, f"blob {entry.blob_sha} missing from the repository")
                    continue
                size = int(header[2])
                data = proc.stdout.read(size)
                proc.stdout.read(1)
                if size > self.config.max_file_bytes:
                    yield self._error(entry.path, self._size_reason(size))
                    continue
                yield self._decode(entry, data)
        finally:
            proc.stdin.close()
            proc.stdout.close()
            proc.wait()

    def _decode(self, entry: FileEntry, data: bytes) -> SourceFile | FileError:
        if b"\0" in data[: self.config.binary_sniff_bytes]:
            return self._error(entry.path, "binary")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            return self._error(entry.path, f"not valid UTF-8 (byte {exc.start})")
        text = text.replace("\r\n", "\n")
        longest = max((len(line) for line in text.split("\n")), default=0)
        if longest > self.config.max_line_chars:
            return self._error(
                entry.path, f"generated or minified (a line of {longest} chars > max_line_chars {self.config.max_line_chars})"
            )
        return SourceFile(path=entry.path, blob_sha=entry.blob_sha, language=entry.language, text=text)

"""Ignore rules: which paths of a repository stay out of the index, with git's exact semantics.

Every decision is git's own, so discovery and `git check-ignore` cannot disagree:

- git's rules (`.gitignore` at every level, `.git/info/exclude`, `core.excludesFile`) are applied by
  `git ls-files --exclude-standard`, which never walks into an ignored directory (node_modules, build/).
  A commit read from git objects holds only tracked files, which git never ignores.
- `.semanticaignore` files (same syntax, at any level) keep paths out of the index only, tracked or not,
  and must work on a commit read from git objects too, where git has no work tree to read them from.
  They are copied as `.gitignore` files into a scratch work tree (no info/exclude, no global excludes)
  and `git check-ignore --no-index --stdin` decides every path in one call. pathspec's `GitIgnoreSpec`
  was tried first and disagrees with git on re-included directories (`cache/**` then `!cache/**/`).
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

IGNORED_PREFIX = "ignored by "
_NO_GLOBAL_RULES = ["-c", "core.excludesFile=/dev/null"]


@dataclass(frozen=True)
class IgnoreMatch:
    """The rule that excluded a path: the ignore file, its 1-based line and the pattern."""

    source: str
    line: int
    pattern: str

    def reason(self) -> str:
        return f"{IGNORED_PREFIX}{self.source}:{self.line}: {self.pattern}"


class NestedIgnore:
    """Ignore files of one name at several directory levels, evaluated by git as if they were `.gitignore`.

    `files` maps a directory ("" for the root, else "a/b") to the bytes of the ignore file found there.
    """

    def __init__(self, file_name: str, files: Mapping[str, bytes]) -> None:
        self.file_name = file_name
        self.files = dict(files)

    def __bool__(self) -> bool:
        return bool(self.files)

    def match_all(self, paths: list[str]) -> dict[str, IgnoreMatch]:
        """The excluding rule of each ignored path in `paths` (files); kept paths are absent."""
        if not self.files or not paths:
            return {}
        with tempfile.TemporaryDirectory(prefix="semantica-ignore-") as scratch:
            root = Path(scratch)
            subprocess.run(["git", "init", "-q", scratch], capture_output=True, check=True)
            for directory, data in self.files.items():
                folder = root / directory
                folder.mkdir(parents=True, exist_ok=True)
                (folder / ".gitignore").write_bytes(data)
            answer = subprocess.run(
                ["git", *_NO_GLOBAL_RULES, "-C", scratch, "check-ignore", "-z", "-v", "--no-index", "--stdin"],
                input=b"\0".join(p.encode("utf-8", "surrogateescape") for p in paths) + b"\0",
                capture_output=True, check=False,
            )
            if answer.returncode not in (0, 1):  # 1: nothing ignored
                raise RuntimeError(f"git check-ignore failed: {answer.stderr.decode('utf-8', 'replace').strip()}")
        found: dict[str, IgnoreMatch] = {}
        for source, line, pattern, path in _records(answer.stdout):
            if pattern.startswith("!"):  # -v also reports paths re-included by a negation
                continue
            directory = source[: -len(".gitignore")].rstrip("/")
            found[path] = IgnoreMatch(f"{directory}/{self.file_name}" if directory else self.file_name,
                                      int(line), pattern)
        return found


def _records(output: bytes) -> list[tuple[str, str, str, str]]:
    """`check-ignore -z -v` output as (source, line, pattern, path) records."""
    fields = [f.decode("utf-8", "surrogateescape") for f in output.split(b"\0")]
    return [(fields[i], fields[i + 1], fields[i + 2], fields[i + 3]) for i in range(0, len(fields) - 3, 4)]


def directory_of(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def git_ignored(repo_path: str) -> list[tuple[str, str]]:
    """Untracked paths git ignores in a work tree, as (path, reason); a wholly ignored directory is one
    entry ending in "/" (git does not walk into it). The reason names the ignore file, line and pattern."""
    listing = subprocess.run(
        ["git", "-C", repo_path, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"],
        capture_output=True, check=False,
    )
    if listing.returncode != 0:
        return []
    paths = [p.decode("utf-8", "surrogateescape") for p in listing.stdout.split(b"\0") if p]
    if not paths:
        return []
    verbose = subprocess.run(
        ["git", "-C", repo_path, "check-ignore", "-z", "-v", "-n", "--no-index", "--stdin"],
        input=b"\0".join(p.encode("utf-8", "surrogateescape") for p in paths) + b"\0",
        capture_output=True, check=False,
    )
    rules: dict[str, str] = {}
    for source, line, pattern, path in _records(verbose.stdout):
        if source:
            rules[path] = f"{IGNORED_PREFIX}{_short_source(repo_path, source)}:{line}: {pattern}"
    return [(p, rules.get(p, f"{IGNORED_PREFIX}git")) for p in paths]


def _short_source(repo_path: str, source: str) -> str:
    """`.git/info/exclude` and in-repo .gitignore paths relative to the repository; a global file as given."""
    prefix = repo_path.rstrip("/") + "/"
    return source[len(prefix):] if source.startswith(prefix) else source

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
- git itself can crash on some inputs (git 2.39's `check-ignore` was seen to segfault on a 30-level
  directory): the paths are then split in halves until the ones git crashes on are found; every other path
  keeps git's verdict, those few are kept out of the index with a reason that says why, and a git that
  crashes on more than `MAX_CRASH_PATHS` of them is an `IgnoreRulesError` naming the git version.
"""

from __future__ import annotations

import signal
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

IGNORED_PREFIX = "ignored by "
UNEVALUATED_PREFIX = "ignore rules could not be evaluated"
GIT_NOTHING_IGNORED = 1  # check-ignore's exit status when no path is ignored
# Paths git may crash on (each skipped with the reason) before discovery refuses: a git that crashes on more
# crashes on its input as a whole, and halving further would cost a git call per path.
MAX_CRASH_PATHS = 64
_NO_GLOBAL_RULES = ["-c", "core.excludesFile=/dev/null"]


@dataclass(frozen=True)
class IgnoreMatch:
    """The rule that excluded a path: the ignore file, its 1-based line and the pattern."""

    source: str
    line: int
    pattern: str

    def reason(self) -> str:
        return f"{IGNORED_PREFIX}{self.source}:{self.line}: {self.pattern}"


@dataclass(frozen=True)
class UnevaluatedIgnore:
    """A path git crashed on while evaluating the ignore rules: kept out of the index (an ignore rule may have
    been meant for it), with the crash as its reason."""

    crash: str

    def reason(self) -> str:
        return f"{UNEVALUATED_PREFIX}: {self.crash} on this path; rename it or upgrade git to index it"


class IgnoreRulesError(ValueError):
    """git cannot evaluate the ignore rules at all; the message says how it failed and what to do."""


def describe_exit(returncode: int) -> str:
    """A git exit status in words: `killed by SIGSEGV` for a signal, else the status."""
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


def git_version() -> str:
    answer = subprocess.run(["git", "--version"], capture_output=True, check=False)
    return answer.stdout.decode("utf-8", "replace").strip() or "git (version unknown)"


class NestedIgnore:
    """Ignore files of one name at several directory levels, evaluated by git as if they were `.gitignore`.

    `files` maps a directory ("" for the root, else "a/b") to the bytes of the ignore file found there.
    """

    def __init__(self, file_name: str, files: Mapping[str, bytes], max_crash_paths: int | None = None) -> None:
        self.file_name = file_name
        self.files = dict(files)
        self.max_crash_paths = MAX_CRASH_PATHS if max_crash_paths is None else max_crash_paths

    def __bool__(self) -> bool:
        return bool(self.files)

    def match_all(self, paths: list[str]) -> dict[str, IgnoreMatch | UnevaluatedIgnore]:
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
            found: dict[str, IgnoreMatch | UnevaluatedIgnore] = {}
            self._check(scratch, paths, found, [])
        return found

    def _check(self, scratch: str, paths: list[str], found: dict[str, IgnoreMatch | UnevaluatedIgnore],
               crashed: list[str]) -> None:
        """git's verdict on `paths` into `found`; where git crashes, halves until the crashing paths are known."""
        answer = subprocess.run(
            ["git", *_NO_GLOBAL_RULES, "-C", scratch, "check-ignore", "-z", "-v", "--no-index", "--stdin"],
            input=b"\0".join(p.encode("utf-8", "surrogateescape") for p in paths) + b"\0",
            capture_output=True, check=False,
        )
        if answer.returncode in (0, GIT_NOTHING_IGNORED):
            self._record(answer.stdout, found)
            return
        how = describe_exit(answer.returncode)
        if len(paths) > 1:
            middle = len(paths) // 2
            self._check(scratch, paths[:middle], found, crashed)
            self._check(scratch, paths[middle:], found, crashed)
            return
        crashed.append(paths[0])
        if len(crashed) > self.max_crash_paths:
            detail = answer.stderr.decode("utf-8", "replace").strip()
            raise IgnoreRulesError(
                f"git check-ignore failed ({how}) on more than {self.max_crash_paths} paths, e.g. "
                f"{crashed[0].encode('utf-8', 'surrogateescape').decode('utf-8', 'backslashreplace')!r}"
                f"{': ' + detail if detail else ''}; {git_version()} cannot evaluate the {self.file_name} rules of "
                f"this repository: upgrade git, or remove the {self.file_name} files and use discover.include_globs")
        found[paths[0]] = UnevaluatedIgnore(f"git check-ignore failed ({how})")

    def _record(self, output: bytes, found: dict[str, IgnoreMatch | UnevaluatedIgnore]) -> None:
        for source, line, pattern, path in _records(output):
            if pattern.startswith("!"):  # -v also reports paths re-included by a negation
                continue
            directory = source[: -len(".gitignore")].rstrip("/")
            found[path] = IgnoreMatch(f"{directory}/{self.file_name}" if directory else self.file_name,
                                      int(line), pattern)


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

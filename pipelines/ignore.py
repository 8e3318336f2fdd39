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
- The verdict and the rule that made it come from two calls: `check-ignore` without `-v` decides which paths
  are ignored, then `-v` names the rule of those. git 2.39's `-v` segfaults on an ignored path 24 or more
  directories deep while the plain call answers it, so a crash of `-v` costs only the rule's name: the paths
  are split in halves, shallowest first, until the ones it crashes on are found (at most `MAX_CRASH_PATHS`;
  past that the deeper rest goes unnamed too), and those stay ignored with a reason that says the rule is unnamed.
  Only a plain call that fails is an `IgnoreRulesError` (naming the git version): git cannot decide at all.
"""

from __future__ import annotations

import signal
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

IGNORED_PREFIX = "ignored by "
GIT_NOTHING_IGNORED = 1  # check-ignore's exit status when no path is ignored
# Paths `check-ignore -v` may crash on before the halving stops (the rest of the batch goes unnamed): each one
# found costs about two git calls per halving level.
MAX_CRASH_PATHS = 64
_NO_GLOBAL_RULES = ("-c", "core.excludesFile=/dev/null")


@dataclass(frozen=True)
class IgnoreMatch:
    """The rule that excluded a path: the ignore file, its 1-based line and the pattern."""

    source: str
    line: int
    pattern: str

    def reason(self) -> str:
        return f"{IGNORED_PREFIX}{self.source}:{self.line}: {self.pattern}"


@dataclass(frozen=True)
class UnnamedIgnore:
    """A path git ignores but could not name the rule of (`check-ignore -v` crashed on it): still ignored."""

    file_name: str
    crash: str

    def reason(self) -> str:
        return f"{IGNORED_PREFIX}{self.file_name} (rule unnamed: git check-ignore -v {self.crash} on this path)"


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

    def match_all(self, paths: list[str]) -> dict[str, IgnoreMatch | UnnamedIgnore]:
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
            ignored = self._verdict(scratch, paths)
            found: dict[str, IgnoreMatch | UnnamedIgnore] = {}
            if ignored:
                named = named_records(lambda batch: _check_ignore(scratch, batch, "-v", config=_NO_GLOBAL_RULES),
                                      ignored, self.max_crash_paths)
                self._record(named.records, found)
                found.update((path, UnnamedIgnore(self.file_name, how)) for path, how in named.unnamed.items())
        return found

    def _verdict(self, scratch: str, paths: list[str]) -> list[str]:
        """The paths git ignores (plain `check-ignore`, which answers where `-v` crashes)."""
        answer = _check_ignore(scratch, paths, config=_NO_GLOBAL_RULES)
        if answer.returncode not in (0, GIT_NOTHING_IGNORED):
            detail = answer.stderr.decode("utf-8", "replace").strip()
            raise IgnoreRulesError(
                f"git check-ignore failed ({describe_exit(answer.returncode)}){': ' + detail if detail else ''}; "
                f"{git_version()} cannot evaluate the {self.file_name} rules of this repository: upgrade git, "
                f"or remove the {self.file_name} files and use discover.include_globs")
        return [f.decode("utf-8", "surrogateescape") for f in answer.stdout.split(b"\0") if f]

    def _record(self, records: list[tuple[str, str, str, str]], found: dict[str, IgnoreMatch | UnnamedIgnore]) -> None:
        for source, line, pattern, path in records:
            if pattern.startswith("!"):  # -v also reports paths re-included by a negation
                continue
            directory = source[: -len(".gitignore")].rstrip("/")
            found[path] = IgnoreMatch(f"{directory}/{self.file_name}" if directory else self.file_name,
                                      int(line), pattern)


@dataclass
class NamedRecords:
    """`check-ignore -v` records (source, line, pattern, path), and the paths it crashed on -> how it crashed."""

    records: list[tuple[str, str, str, str]]
    unnamed: dict[str, str]


def named_records(check: Callable[[list[str]], subprocess.CompletedProcess[bytes]], paths: list[str],
                  max_crash_paths: int) -> NamedRecords:
    """`check(batch)` runs one `check-ignore -v`; where it crashes, the batch is halved until the paths it crashes on
    are known (shallow paths first: the crashes come with depth, so past `max_crash_paths` the rest, the deepest,
    go unnamed together)."""
    named = NamedRecords([], {})
    pending = [sorted(paths, key=lambda path: path.count("/"))]
    while pending:
        batch = pending.pop(0)
        answer = check(batch)
        if answer.returncode in (0, GIT_NOTHING_IGNORED):
            named.records.extend(_records(answer.stdout))
        elif len(batch) > 1 and len(named.unnamed) < max_crash_paths:
            middle = len(batch) // 2
            pending[:0] = [batch[:middle], batch[middle:]]
        else:
            named.unnamed.update(dict.fromkeys(batch, describe_exit(answer.returncode)))
    return named


def _check_ignore(cwd: str, paths: list[str], *flags: str, config: tuple[str, ...] = ()) -> subprocess.CompletedProcess[bytes]:
    """One `git check-ignore -z --no-index --stdin` over `paths` in `cwd` (`config`: git `-c` options)."""
    return subprocess.run(
        ["git", *config, "-C", cwd, "check-ignore", "-z", *flags, "--no-index", "--stdin"],
        input=b"\0".join(p.encode("utf-8", "surrogateescape") for p in paths) + b"\0",
        capture_output=True, check=False,
    )


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
    rules: dict[str, str] = {}
    named = named_records(lambda batch: _check_ignore(repo_path, batch, "-v", "-n"), paths, MAX_CRASH_PATHS)
    for source, line, pattern, path in named.records:
        if source:
            rules[path] = f"{IGNORED_PREFIX}{_short_source(repo_path, source)}:{line}: {pattern}"
    return [(p, rules.get(p, f"{IGNORED_PREFIX}git")) for p in paths]


def _short_source(repo_path: str, source: str) -> str:
    """`.git/info/exclude` and in-repo .gitignore paths relative to the repository; a global file as given."""
    prefix = repo_path.rstrip("/") + "/"
    return source[len(prefix):] if source.startswith(prefix) else source

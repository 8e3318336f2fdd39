"""Reading a git repository (bare or not) without a checkout: commits, diffs at the parent, files at a commit.

Commits and diffs come from `git log` / `git diff -U0`, over the files of every language with function spans
(`semantica.languages.spans`: the language table's suffixes as pathspecs). Shared by the history index
(semantica/stores/history) and the training miners that attribute changed lines to functions
(jobs/train/pairs.py, jobs/localizer/corpus.py).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field

from semantica.languages.spans import span_suffixes
from semantica.stores.history.records import ISSUE_REF, PR_MERGE, TRAILER, message_text  # noqa: F401  (the miner's names)

HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")
RECORD_SEP = "\x1e"
FIELD_SEP = "\x00"


def _tally(change: FileChange, line: bytes) -> None:
    """One diff line of a file: a hunk header adds the old lines it covers; `+`/`-` lines count."""
    if line.startswith(b"@@"):
        match = HUNK.match(line)
        if match:
            start, count = int(match.group(1)), int(match.group(2) or 1)
            change.old_lines.update(range(start, start + count) if count else [max(1, start)])
    elif line.startswith(b"+") and not line.startswith(b"+++"):
        change.added += 1
    elif line.startswith(b"-") and not line.startswith(b"---"):
        change.removed += 1

@dataclass
class Commit:
    """One commit of the mined history (first-parent)."""

    sha: str
    parents: list[str]
    author: str
    message: str

    def query(self) -> str:
        """Subject and body without trailers (`message_text`); a PR merge contributes its PR title, not "Merge ..."."""
        return message_text(self.message)

    def issue_refs(self) -> list[str]:
        return sorted(set(ISSUE_REF.findall(self.message)), key=int)


class GitReadError(RuntimeError):
    """A git command that history needs failed (a missing object in a partial mirror, a corrupt pack)."""


def git(repo_path: str, *args: str) -> bytes:
    result = subprocess.run(["git", "-C", repo_path, *args], capture_output=True, check=False)
    if result.returncode != 0:
        raise GitReadError(f"git {' '.join(args[:2])} failed in {repo_path}: "
                           f"{result.stderr.decode('utf-8', 'replace').strip()}")
    return result.stdout


def first_parent_history(repo_path: str, limit: int) -> list[Commit]:
    """Newest first, at most `limit` commits of HEAD's first-parent line."""
    raw = git(repo_path, "log", "--first-parent", f"--max-count={limit}",
              "--format=%H%x00%P%x00%an <%ae>%x00%B%x1e", "HEAD")  # git writes the separators
    commits = []
    for record in raw.decode("utf-8", "replace").split(RECORD_SEP):
        parts = record.strip("\n").split(FIELD_SEP)
        if len(parts) == 4:
            commits.append(Commit(parts[0], parts[1].split(), parts[2], parts[3]))
    return commits


@dataclass
class FileChange:
    """Lines of the parent's version of a file that a commit changed (insertions: the line before)."""

    path: str
    old_lines: set[int] = field(default_factory=set)
    added: int = 0
    removed: int = 0


def changed_python_lines(repo_path: str, parent: str, commit: str) -> list[FileChange]:
    """Per `.py` file modified (not added) by `commit` against `parent`, the parent-side lines it touched."""
    return _parse_diff(git(repo_path, "diff", "-U0", "--no-renames", "--no-color", parent, commit, "--", "*.py"))


def changed_source_lines(repo_path: str, parent: str, commit: str) -> list[FileChange]:
    """Per source file (`source_pathspecs`: every language with function spans) modified, not added, by `commit`
    against `parent`, the parent-side lines it touched."""
    raw = git(repo_path, "diff", "-U0", "--no-renames", "--no-color", parent, commit, "--", *source_pathspecs())
    return _parse_diff(raw)


def first_parent_shas(repo_path: str, commit: str, limit: int) -> list[str]:
    """`commit` and its first-parent ancestors, newest first, at most `limit` (never a descendant of `commit`)."""
    raw = git(repo_path, "rev-list", "--first-parent", f"--max-count={limit}", commit)
    return raw.decode("ascii").split()


def resolve_commit(repo_path: str, rev: str) -> str:
    """The full sha of `rev` (a branch, tag or sha); raises RuntimeError when it is not a commit."""
    return git(repo_path, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").decode("ascii").strip()


@dataclass
class LoggedCommit:
    """One first-parent commit as `git log -p` wrote it: header fields and its source changes at the parent."""

    sha: str
    parents: list[str]
    author: str
    author_time: int
    message: str
    changes: list[FileChange]


_LOG_FORMAT = "--format=%x1e%H%x00%P%x00%an <%ae>%x00%at%x00%B%x00"


def _parse_diff(raw: bytes) -> list[FileChange]:
    """Each modified file's changes; a `--- ` line is a file header only before the file's first hunk (inside one
    it is a removed line that starts with `-- `)."""
    changes: list[FileChange] = []
    current: FileChange | None = None
    for line in raw.split(b"\n"):
        if line.startswith(b"diff --git "):
            current = None
        elif current is None and line.startswith(b"--- "):
            path = line[4:].decode("utf-8", "replace")
            if path.startswith("a/"):
                current = FileChange(path[2:])
                changes.append(current)
        elif current is not None:
            _tally(current, line)
    return changes


def source_pathspecs() -> list[str]:
    """Git pathspecs for the files of every language with function spans (the language table's suffixes)."""
    return [f"*{suffix}" for suffix in span_suffixes()]


def log_with_source_diffs(repo_path: str, commit: str, stop_before: str | None) -> list[LoggedCommit]:
    """First-parent commits from `commit` back to (not including) `stop_before` (None: to the root), each
    with its source changes (`source_pathspecs`) against its first parent (a merge's diff is the PR's whole
    change). Commits that change no such file are absent: git's pathspec skips them."""
    args = ["log", "--first-parent", "--diff-merges=first-parent", "-p", "-U0", "--no-renames",
            "--no-color", "--no-ext-diff", _LOG_FORMAT, commit]
    if stop_before:
        args.append(f"^{stop_before}")
    raw = git(repo_path, *args, "--", *source_pathspecs())
    out: list[LoggedCommit] = []
    for record in raw.split(RECORD_SEP.encode()):
        parts = record.split(FIELD_SEP.encode(), 5)
        if len(parts) < 6:
            continue
        sha, parents, author, when, message, diff = parts
        out.append(LoggedCommit(sha.decode("ascii").strip(), parents.decode("ascii").split(),
                                author.decode("utf-8", "replace"), int(when or 0),
                                message.decode("utf-8", "replace"), _parse_diff(diff)))
    return out


class BlobReader:
    """Blob text by sha through one long-lived `git cat-file --batch` (one process, not one per file)."""

    def __init__(self, repo_path: str) -> None:
        self._process = subprocess.Popen(["git", "-C", repo_path, "cat-file", "--batch"],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def read(self, spec: str) -> str | None:
        """The text of a blob (a sha, or `commit:path`), or None when it is missing."""
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(spec.encode("utf-8", "surrogateescape") + b"\n")
        self._process.stdin.flush()
        header = self._process.stdout.readline().split()
        if len(header) < 3 or header[1] != b"blob":
            return None
        size = int(header[2])
        data = self._process.stdout.read(size + 1)[:size]
        return data.decode("utf-8", "replace")

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            self._process.wait()

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def source_renames(repo_path: str, commit: str) -> dict[str, list[tuple[str, str]]]:
    """sha -> the source file renames (old, new) it made against its first parent, for `commit` and its first-parent
    ancestors (git's rename detection; commits without a rename are absent)."""
    raw = git(repo_path, "log", "--first-parent", "--diff-merges=first-parent", "-M", "--diff-filter=R",
              "--name-status", "--format=%x1e%H", commit, "--", *source_pathspecs())
    out: dict[str, list[tuple[str, str]]] = {}
    for record in raw.decode("utf-8", "replace").split(RECORD_SEP):
        lines = [line for line in record.strip("\n").split("\n") if line]
        if not lines:
            continue
        pairs = [tuple(line.split("\t")[1:3]) for line in lines[1:] if line.startswith("R") and line.count("\t") >= 2]
        if pairs:
            out[lines[0].strip()] = pairs  # type: ignore[assignment]
    return out


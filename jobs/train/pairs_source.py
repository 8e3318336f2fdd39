"""What the pair miner reads from a bare git repository: Python function spans, commits and their diffs.

Function spans come from the stdlib `ast` (exact docstring lines, which the tree-sitter chunker does not
separate); nested functions fold into the outer function that holds them, as in the SWE-bench gold.
Commits and diffs come from `git log` / `git diff -U0`; file text at a commit is read through
`pipelines.discover.RepoSource` (git objects, no checkout), as the indexer reads it.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field

from semantica.python_spans import FunctionSpan, function_spans

__all__ = ["FunctionSpan", "function_spans"]

HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")
ISSUE_REF = re.compile(r"\b(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?)\s*:?\s*#(\d+)", re.I)
PR_MERGE = re.compile(r"^Merge pull request #(\d+) from \S+")
TRAILER = re.compile(r"^(?:co-authored-by|signed-off-by|reviewed-by|cc):", re.I)
RECORD_SEP = "\x1e"
FIELD_SEP = "\x00"


@dataclass
class Commit:
    """One commit of the mined history (first-parent)."""

    sha: str
    parents: list[str]
    author: str
    message: str

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0].strip()

    def query(self) -> str:
        """Subject and body without trailers; a PR merge contributes its PR title (the body), not "Merge ..."."""
        lines = [line for line in self.message.strip().split("\n") if not TRAILER.match(line.strip())]
        if lines and PR_MERGE.match(lines[0]):
            lines = lines[1:]
        return "\n".join(lines).strip()

    def issue_refs(self) -> list[str]:
        return sorted(set(ISSUE_REF.findall(self.message)), key=int)


def git(repo_path: str, *args: str) -> bytes:
    result = subprocess.run(["git", "-C", repo_path, *args], capture_output=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args[:2])} failed in {repo_path}: "
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
    raw = git(repo_path, "diff", "-U0", "--no-renames", "--no-color", parent, commit, "--", "*.py")
    changes: list[FileChange] = []
    current: FileChange | None = None
    for line in raw.split(b"\n"):
        if line.startswith(b"diff --git "):
            current = None
        elif line.startswith(b"--- "):
            path = line[4:].decode("utf-8", "replace")
            current = FileChange(path[2:]) if path.startswith("a/") else None
            if current is not None:
                changes.append(current)
        elif current is not None and line.startswith(b"@@"):
            match = HUNK.match(line)
            if match:
                start, count = int(match.group(1)), int(match.group(2) or 1)
                current.old_lines.update(range(start, start + count) if count else [max(1, start)])
        elif current is not None and line.startswith(b"+") and not line.startswith(b"+++"):
            current.added += 1
        elif current is not None and line.startswith(b"-") and not line.startswith(b"---"):
            current.removed += 1
    return changes

"""One past commit as the history index keeps it, and the filter that drops bot/revert/bump/huge/trivial ones."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from semantica.config import HistoryConfig

ISSUE_REF = re.compile(r"\b(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?)\s*:?\s*#(\d+)", re.I)
PR_MERGE = re.compile(r"^Merge pull request #(\d+) from \S+")
TRAILER = re.compile(r"^(?:co-authored-by|signed-off-by|reviewed-by|cc):", re.I)


def message_text(message: str) -> str:
    """The searchable message: subject and body without trailers; a PR merge gives its title and body, not
    "Merge pull request ..."."""
    lines = [line for line in message.strip().split("\n") if not TRAILER.match(line.strip())]
    if lines and PR_MERGE.match(lines[0]):
        lines = lines[1:]
    return "\n".join(lines).strip()


@dataclass
class CommitRecord:
    """What one first-parent commit changed, read at its parent: facts only, no filter applied (the cache holds
    these, so changing a threshold in conf never needs git again)."""

    sha: str
    parent: str
    author: str
    author_time: int
    message: str
    files: list[str] = field(default_factory=list)
    lines_changed: int = 0

    @property
    def subject(self) -> str:
        return self.message.strip().split("\n", 1)[0].strip()

    @property
    def pr_title(self) -> str:
        """A PR merge's title (the body's first line, `Merge pull request #N from ...` skipped), else ''."""
        lines = self.message.strip().split("\n")
        if lines and PR_MERGE.match(lines[0]):
            rest = [line.strip() for line in lines[1:] if line.strip()]
            return rest[0] if rest else ""
        return ""

    @property
    def issue_refs(self) -> list[str]:
        """`Fixes #N` / `closes #N` numbers the message names."""
        return sorted(set(ISSUE_REF.findall(self.message)), key=int)

    def text(self) -> str:
        return message_text(self.message)

    def display_subject(self) -> str:
        return self.pr_title or self.subject

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> CommitRecord:
        """A record from its stored fields; other keys are ignored (a cache row or a snapshot's table written when
        history also read functions holds `functions` and `functions_skipped`)."""
        return cls(**{name: values[name] for name in RECORD_FIELDS if name in values})


RECORD_FIELDS = tuple(f.name for f in fields(CommitRecord))
"""The stored columns of a record, in order."""


class CommitFilter:
    """Why a commit is dropped from the history ('' = kept). Thresholds: `history.*` in conf."""

    def __init__(self, config: HistoryConfig) -> None:
        self.config = config
        self.fix = re.compile(config.fix_pattern, re.I)

    def reason(self, record: CommitRecord) -> str:
        c = self.config
        if not record.parent:
            return "root commit"
        if any(marker.lower() in record.author.lower() for marker in c.bot_markers):
            return "bot author"
        text = record.text()
        subject = text.split("\n", 1)[0].strip().lower()
        if any(subject.startswith(prefix.lower()) for prefix in c.skip_subject_prefixes):
            return "skipped subject"
        if len(text) < c.min_message_chars:
            return "trivial message"
        if not record.files:
            return "no source change"
        if len(record.files) > c.max_commit_files or record.lines_changed > c.max_commit_lines:
            return "huge"
        return ""

    def fix_like(self, record: CommitRecord) -> bool:
        """A commit that reads like a bug fix (the prior counts these apart)."""
        return bool(self.fix.search(record.text()))


@dataclass
class History:
    """The kept commits of one snapshot (newest first), all at or before `commit`, and how they were read."""

    commit: str
    commit_time: int
    records: list[CommitRecord]
    fix_like: set[str] = field(default_factory=set)
    read_commits: int = 0
    cached_commits: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    live_files: set[str] | None = None
    """Source paths (every language with function spans) that exist at `commit` (votes and priors for files deleted
    since are left out); None = not known, keep all."""
    renamed_paths: int = 0
    """Record paths rewritten to the path the file has at `commit` (it was renamed later, but not after `commit`)."""

"""What goes wrong with the on-disk index (`semantica.layout`), as the error kinds clients see (`semantica.errors`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from semantica.errors import ErrorKind

BRANCH_SEPARATOR = "@"  # `repo@branch`: a branch snapshot's name (semantica.ondisk.branch_keys)


class LayoutError(RuntimeError):
    """The index directory is missing something or is inconsistent."""

    error_kind = ErrorKind.UNAVAILABLE


class UnknownRepoError(LayoutError):
    """No published snapshot exists for the asked repository. The message lists the indexed ones, but
    `message_for` lists only those a caller may read: a scoped token never learns the others' names."""

    error_kind = ErrorKind.NOT_FOUND

    def __init__(self, repo: str, indexed: Sequence[str] | None = None, detail: str = "") -> None:
        self.repo, self.indexed, self.detail = repo, None if indexed is None else list(indexed), detail
        super().__init__(self.message_for(None))

    def message_for(self, may_read: Callable[[str], bool] | None) -> str:
        if self.indexed is None:  # the detail may name another repository: only for a caller who reads all
            return self.detail if self.detail and may_read is None else f"repository {self.repo!r} has no published snapshot"
        known = ", ".join(n for n in self.indexed if may_read is None or may_read(n)) or "none"
        return f"repository {self.repo!r} has no published snapshot (indexed: {known}); run `{self.index_command()}`"

    def index_command(self) -> str:
        """What publishes it: a branch snapshot `NAME@BRANCH` comes from `--name NAME --ref BRANCH` (`index`
        refuses an `@` in `--name`)."""
        bare, at, branch = self.repo.partition(BRANCH_SEPARATOR)
        if at and bare and branch:
            return f"semantica index --repo PATH --name {bare} --ref {branch}"
        return f"semantica index --repo PATH --name {self.repo}"

    def __reduce__(self) -> tuple[Any, ...]:  # crosses Ray (a retriever deployment raises it)
        return type(self), (self.repo, self.indexed, self.detail)


class BrokenSnapshotError(LayoutError):
    """A repository's published snapshot cannot be read (corrupt, missing, unreadable): HTTP 503."""

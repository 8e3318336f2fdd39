"""The commit a snapshot was built from, which a worktree snapshot records in its source, not in its manifest's
`commit`. (The freshness block every answer carries is `semantica.snapshot.answer_freshness`.)"""

from __future__ import annotations

from semantica.schema import Manifest


def built_commit(manifest: Manifest) -> str:
    """The commit a snapshot was built from: a worktree snapshot's HEAD lives in its source record."""
    return str((manifest.source or {}).get("commit") or manifest.commit)

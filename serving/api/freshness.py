"""The freshness of an answer: one shape on every front and every answer (search, grep, graph, map), an
object keyed by repository whose values are `semantica.ondisk.freshness.Freshness`; and the commit a snapshot
was built from, which a worktree snapshot records in its source, not in its manifest's `commit`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from semantica.config import Config
from semantica.errors import public_message
from semantica.ondisk.freshness import Freshness
from semantica.schema import Manifest
from semantica.snapshot import SnapshotSet


def answer_freshness(config: Config, snapshots: SnapshotSet, names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """`{repo: Freshness}` for the snapshots an answer read (`{}` when `freshness.enabled` is off)."""
    if not config.freshness.enabled:
        return {}
    return {name: snapshot_freshness(snapshots, name) for name in names}


def snapshot_freshness(snapshots: SnapshotSet, name: str) -> dict[str, Any]:
    """One snapshot's `Freshness`; one that cannot be checked is `stale: null` with the reason, never an error
    of the answer or the listing that asks."""
    try:
        return snapshots.get(name).freshness().to_dict()
    except Exception as exc:  # the answer stands; its freshness is unknown
        return Freshness(repo=name, snapshot_id="", commit="", built_at="", reason=public_message(exc)).to_dict()


def built_commit(manifest: Manifest) -> str:
    """The commit a snapshot was built from: a worktree snapshot's HEAD lives in its source record."""
    return str((manifest.source or {}).get("commit") or manifest.commit)

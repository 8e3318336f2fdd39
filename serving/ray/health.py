"""Serve's replica health check: a replica whose snapshots cannot be read, or are older than the configured limit,
raises from `check_health`, so Serve takes it out of rotation and starts a fresh one (which reopens the index)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from semantica.snapshot import SnapshotSet


class ReplicaUnhealthy(RuntimeError):
    """Raised by `check_health`: the message names the repository and why (no paths)."""


@dataclass(frozen=True)
class SnapshotHealthCheck:
    """Every published snapshot readable (`SnapshotSet.health`: manifest parsed, files present, tables' footers
    read) and, when `max_age_s` > 0, built within that many seconds. No repository at all is healthy: a cluster
    serves before its first index."""

    snapshots: SnapshotSet
    max_age_s: float = 0.0

    def check(self, now: dt.datetime | None = None) -> None:
        moment = now or dt.datetime.now(dt.UTC)
        for row in self.snapshots.health():
            if not row.ok:
                raise ReplicaUnhealthy(f"repository {row.repo!r}: snapshot unreadable: {row.error or row.status.value}")
            if self.max_age_s > 0:
                age = self._age_s(row.created, moment)
                if age is None or age > self.max_age_s:
                    shown = "unknown" if age is None else f"{age:.0f} s"
                    raise ReplicaUnhealthy(f"repository {row.repo!r}: snapshot {row.snapshot_id} is {shown} old "
                                           f"(limit serve.snapshot_max_age_s={self.max_age_s:.0f} s)")

    @staticmethod
    def _age_s(created: str, now: dt.datetime) -> float | None:
        try:
            built = dt.datetime.fromisoformat(created)
        except (TypeError, ValueError):
            return None
        if built.tzinfo is None:
            built = built.replace(tzinfo=dt.UTC)
        return (now - built).total_seconds()

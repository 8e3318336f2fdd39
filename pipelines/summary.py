"""What indexing did: one repository's summary and a batch's (printed by the CLI, returned by `Indexer`)."""

from __future__ import annotations

import resource
from dataclasses import asdict, dataclass, field
from typing import Any

STATUS_OK = "ok"
STATUS_FAILED = "failed"


@dataclass
class IndexSummary:
    """What one repository's indexing did (printed by the CLI; `--json` prints it as one object)."""

    repo: str
    commit: str = ""
    snapshot_id: str = ""
    snapshot_path: str = ""
    files: int = 0
    chunks: int = 0
    symbols: int = 0
    edges: int = 0
    errors: int = 0
    files_parsed: int = 0
    files_reused: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    chunks_token_encoded: int = 0  # chunks whose token vectors were computed in this run (0 = all reused)
    shards_linked: int = 0  # shards hard-linked from the previous snapshot (content unchanged)
    shards_written: int = 0  # shards built in this run
    seconds: dict[str, float] = field(default_factory=dict)
    peak_rss_mb: float = 0.0
    error_samples: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RepoResult(IndexSummary):
    """One repository's outcome in a batch: the summary plus a status and, when failed, the reason."""

    status: str = STATUS_FAILED
    reason: str = ""


@dataclass
class BatchSummary:
    """What `semantica index-batch` did; exit code 0 only when every repo is ok."""

    repos: list[RepoResult]
    seconds: float = 0.0
    ray_used: bool = False
    ray_address: str = ""
    files_through_ray: int = 0
    peak_rss_mb: float = 0.0

    @property
    def ok(self) -> bool:
        return all(r.status == STATUS_OK for r in self.repos)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def peak_rss_mb() -> float:
    """Peak resident memory of this process (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

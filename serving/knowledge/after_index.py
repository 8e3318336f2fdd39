"""What `semantica index` does for knowledge once a snapshot is published: ADR/doc candidates, then a
curator pass over that repository's store (re-verify against the new snapshot, promote, decay, retire)."""

from __future__ import annotations

import time
from typing import Any

from semantica.config import Config
from serving.knowledge.candidates import ingest_candidates
from serving.knowledge.curator import REPORTS_DIR, Curator
from serving.knowledge.service import KnowledgeService
from serving.knowledge.store import knowledge_dir


def after_index(config: Config, repo: str, service: KnowledgeService | None = None) -> dict[str, Any]:
    """{candidates, changes, report, ms}; nothing when `knowledge.curate_after_index` is off."""
    if not config.knowledge.curate_after_index:
        return {}
    started = time.perf_counter()
    service = service or KnowledgeService(config)
    candidates = ingest_candidates(service, service.snapshots.get(repo))
    report = Curator(service).run([repo], knowledge_dir(config) / REPORTS_DIR)
    return {"candidates": candidates, "changes": [c.to_dict() for c in report.changes],
            "report": report.path,
            "ms": round((time.perf_counter() - started) * 1000, 1)}

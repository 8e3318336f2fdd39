"""The curator: one pass over the knowledge stores that keeps trust honest, with a report of every change.

Per repository (its newest snapshot, when it has one):
1. re-verify the `VERIFY_TOP` most trusted open entries (active, review, candidate): a scope whose path
   or symbol is gone fails and the entry is demoted (its trust x failed_factor); one that passes again is restored;
2. promote verified (green) candidates at or above the threshold that contradict nothing (`auto_promote`);
   an agent's candidate is never promoted: only `knowledge review ID --keep` by a person makes it active;
3. send new contradictions among active entries to review;
4. recompute every open entry's trust at `now` (freshness decays with the half-life since last use);
5. retire an entry whose trust stayed below `floor` for `grace_days` (kept, readable, with the reason).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from serving.knowledge.entry import Entry, Status, Verification, iso, parse_iso
from serving.knowledge.service import OPEN, KnowledgeService
from serving.knowledge.store import KnowledgeStore

SECONDS_PER_DAY = 86400.0
REPORTS_DIR = "reports"
VERIFY_TOP = 50  # the curator re-verifies this many most trusted open entries per repository (bounds a pass)


@dataclass
class Change:
    id: str
    title: str
    change: str  # demoted | restored | promoted | review | decayed | retired | below_floor
    why: str
    trust_before: float
    trust_after: float

    def to_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


@dataclass
class CurateReport:
    now: str
    repos: dict[str, dict[str, Any]] = field(default_factory=dict)
    seconds: float = 0.0
    path: str = ""  # where the JSON report was written ("" = not written)

    @property
    def changes(self) -> list[Change]:
        return [c for r in self.repos.values() for c in r["changes"]]

    def to_dict(self) -> dict[str, Any]:
        return {"now": self.now, "seconds": round(self.seconds, 4), "report": self.path,
                "repos": {name: {**r, "changes": [c.to_dict() for c in r["changes"]]} for name, r in self.repos.items()}}


class Curator:
    def __init__(self, service: KnowledgeService) -> None:
        self.service = service
        self.config = service.config.knowledge

    def run(self, repos: list[str] | None = None, report_dir: Path | None = None) -> CurateReport:
        started = time.perf_counter()
        now = self.service.clock()
        report = CurateReport(now=iso(now))
        for store in list(self.service.base.stores(repos)):
            report.repos[store.repo or "(global)"] = self._curate(store)
        report.seconds = time.perf_counter() - started
        if report_dir is not None:
            report_dir.mkdir(parents=True, exist_ok=True)
            path = report_dir / f"curate-{now.strftime('%Y%m%dT%H%M%S')}.json"
            report.path = str(path)
            path.write_text(json.dumps(report.to_dict(), indent=1, ensure_ascii=False))
        return report

    def _curate(self, store: KnowledgeStore) -> dict[str, Any]:
        changes: list[Change] = []
        index = self.service.snapshot_index(store.repo)
        checked = 0
        if index is not None:
            for entry in store.entries(OPEN)[:VERIFY_TOP]:
                checked += 1
                changes += self._reverify(store, entry, index)
        for entry in store.entries((Status.CANDIDATE,)):
            changes += self._promote(store, entry)
        for entry in store.entries((Status.ACTIVE,)):
            if store.get(entry.id).status != Status.ACTIVE.value:
                continue  # already sent to review as another entry's partner in this pass
            partners = self.service.check_conflicts(store, entry.id, "curator")
            if partners:
                changes.append(Change(entry.id, entry.title, "review", f"contradicts {', '.join(partners)}",
                                      entry.trust, store.get(entry.id).trust))
        for entry in store.entries(OPEN):
            changes += self._decay(store, entry)
        return {"snapshot": index.snapshot.snapshot_id if index else "", "verified": checked, "changes": changes}

    def _reverify(self, store: KnowledgeStore, entry: Entry, index: Any) -> list[Change]:
        result = self.service.verifier.verify(entry, index)
        after = store.update(entry.id, "curator", "re-verified",
                             lambda e: self.service.record_verification(e, result))
        if result.state.value == entry.verification:
            return []
        if result.state is Verification.FAILED:
            return [Change(entry.id, entry.title, "demoted", "; ".join(result.notes), entry.trust, after.trust)]
        if entry.verification == Verification.FAILED.value:
            return [Change(entry.id, entry.title, "restored", f"scope found again in {result.snapshot_id}",
                           entry.trust, after.trust)]
        return []

    def _promote(self, store: KnowledgeStore, entry: Entry) -> list[Change]:
        fresh = store.get(entry.id)
        trust = store.scorer.score(fresh, self.service.clock())
        if fresh.needs_review:  # an agent's entry waits for a person, whatever its score
            return []
        if not (self.config.auto_promote and fresh.verification == Verification.GREEN.value
                and trust >= self.config.threshold and not fresh.conflicts_with):
            return []
        store.set_status(entry.id, Status.ACTIVE, "curator", f"verified candidate at trust {trust:.3f}")
        partners = self.service.check_conflicts(store, entry.id, "curator")
        if partners:
            return [Change(entry.id, entry.title, "review", f"candidate contradicts {', '.join(partners)}", trust, trust)]
        return [Change(entry.id, entry.title, "promoted", f"verified, trust {trust:.3f} >= threshold", fresh.trust, trust)]

    def _decay(self, store: KnowledgeStore, entry: Entry) -> list[Change]:
        now = self.service.clock()
        before = entry.trust
        trust = store.scorer.score(entry, now)
        out: list[Change] = []
        if before >= self.config.threshold > trust:
            out.append(Change(entry.id, entry.title, "decayed", "trust fell below the threshold: no longer injected",
                              before, trust))
        since = parse_iso(entry.below_floor_since)
        if trust >= self.config.floor:
            store.update(entry.id, "curator", "trust", lambda e: setattr(e, "below_floor_since", ""))
            return out
        if since is None:
            store.update(entry.id, "curator", "trust", lambda e: setattr(e, "below_floor_since", iso(now)))
            return [*out, Change(entry.id, entry.title, "below_floor",
                                 f"trust {trust:.3f} < floor {self.config.floor}: retired after {self.config.grace_days:g} "
                                 "days unless it recovers", before, trust)]
        days = (now - since).total_seconds() / SECONDS_PER_DAY
        if days < self.config.grace_days:
            store.update(entry.id, "curator", "trust", lambda e: None)
            return out
        why = (f"trust {trust:.3f} below floor {self.config.floor} for {days:.1f} days"
               + (f" (verification failed: {'; '.join(entry.verify_notes)})" if entry.verify_notes else ""))
        store.set_status(entry.id, Status.RETIRED, "curator", why)
        return [*out, Change(entry.id, entry.title, "retired", why, before, trust)]

"""The knowledge operations every front end shares (CLI, HTTP, MCP, index time): add with verification and
conflict checks, edit, pin, retire, review, feedback. Callers scope repositories; this class trusts them."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from semantica.config import Config
from semantica.ondisk.layout_errors import LayoutError
from semantica.snapshot import SnapshotSet
from serving.knowledge.conflicts import CONFLICT_SIMILARITY, find_conflicts
from serving.knowledge.entry import GLOBAL, Entry, Review, SourceKind, Status, iso, now_utc
from serving.knowledge.store import Clock, KnowledgeBase, KnowledgeInputError, KnowledgeStore
from serving.knowledge.verify import SnapshotIndex, Verifier, VerifyResult

log = logging.getLogger(__name__)
OPEN = (Status.ACTIVE, Status.REVIEW, Status.CANDIDATE)
SCOPE_FIELDS = frozenset({"paths", "symbols", "evidence"})  # what verification checks against the snapshot
FEEDBACK_STEP = 1.0  # one vote per feedback on an answer that used the entry (its sign is the rating's)


@dataclass
class AddResult:
    entry: Entry
    warnings: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"entry": self.entry.to_dict(), "warnings": self.warnings, "conflicts": self.conflicts}


class KnowledgeService:
    def __init__(self, config: Config, clock: Clock = now_utc, snapshots: SnapshotSet | None = None,
                 base: KnowledgeBase | None = None) -> None:
        self.config, self.clock = config, clock
        self.base = base or KnowledgeBase(config, clock)
        self.snapshots = snapshots or SnapshotSet(config)
        self.verifier = Verifier()

    def snapshot_index(self, repo: str) -> SnapshotIndex | None:
        """The repository's current snapshot, or None (global entries, a repository not indexed yet)."""
        if repo == GLOBAL:
            return None
        try:
            return SnapshotIndex(self.snapshots.get(repo))
        except LayoutError:
            return None

    def _read_index(self, repo: str, values: dict[str, Any]) -> SnapshotIndex | None:
        """The snapshot `values` will be verified against, its tables read when they name a scope (before the
        store is written: a damaged table is then a 503 with nothing stored)."""
        index = self.snapshot_index(repo)
        if index is not None and any(values.get(name) for name in SCOPE_FIELDS):
            index.read_tables()
        return index

    def add(self, repo: str, fields: dict[str, Any], actor: str = "") -> AddResult:
        """Store a new entry, verify its scope against the current snapshot and send it to review when it
        contradicts an open entry. An agent's proposal starts as a candidate."""
        values = dict(fields)
        status = values.pop("status", None) or (Status.CANDIDATE.value if values.get("source_kind") ==
                                                SourceKind.AGENT.value else Status.ACTIVE.value)
        store = self.base.store(repo)
        index = self._read_index(store.repo, values)
        entry = store.add(status=status, **values)
        warnings: list[str] = []
        if index is not None:
            result = self.verifier.verify(entry, index)
            warnings = result.warnings
            entry = store.update(entry.id, actor, "verified at add", lambda e: self.record_verification(e, result))
        elif entry.paths or entry.symbols:
            warnings.append("no snapshot of this repository to check the scope against: verification pending")
        return AddResult(entry, warnings, self.check_conflicts(store, entry.id, actor))

    def record_verification(self, entry: Entry, result: VerifyResult) -> None:
        entry.verification, entry.verify_notes, entry.last_verified = result.state.value, result.notes, iso(self.clock())
        entry.evidence_resolved = result.evidence

    def check_conflicts(self, store: KnowledgeStore, entry_id: str, actor: str = "") -> list[str]:
        """Send the entry and every open entry it contradicts to review; the ids of those it contradicts."""
        entry = store.get(entry_id)
        if entry.status == Status.RETIRED.value:
            return []
        found = find_conflicts(entry, [e for e in store.entries((Status.ACTIVE, Status.REVIEW))],
                               CONFLICT_SIMILARITY)
        if not found:
            return []
        for other in [entry, *found]:
            partners = [e.id for e in found] if other.id == entry.id else [entry.id]

            def mark(e: Entry, partners: list[str] = partners) -> None:
                e.status = Status.REVIEW.value
                e.conflicts_with = sorted(set(e.conflicts_with) | set(partners))

            store.update(other.id, actor or "conflicts", f"contradicts {', '.join(partners)}", mark, bump=True)
        return [e.id for e in found]

    def edit(self, entry_id: str, changes: dict[str, Any], repos: list[str] | None = None, actor: str = "",
             why: str = "") -> AddResult:
        store = self.base.find(entry_id, repos)
        index = self._read_index(store.repo, changes)
        entry = store.edit(entry_id, changes, actor, why)
        warnings: list[str] = []
        if index is not None and SCOPE_FIELDS & set(changes):
            result = self.verifier.verify(entry, index)
            warnings = result.warnings
            entry = store.update(entry_id, actor, "verified at edit", lambda e: self.record_verification(e, result))
        return AddResult(entry, warnings, self.check_conflicts(store, entry_id, actor))

    def pin(self, entry_id: str, pinned: bool, repos: list[str] | None = None, actor: str = "") -> Entry:
        store = self.base.find(entry_id, repos)
        return store.update(entry_id, actor, "pinned" if pinned else "unpinned",
                            lambda e: setattr(e, "pinned", pinned), bump=True)

    def retire(self, entry_id: str, reason: str, repos: list[str] | None = None, actor: str = "") -> Entry:
        if not reason.strip():
            raise KnowledgeInputError("retiring an entry needs a reason (it stays readable with it)")
        return self.base.find(entry_id, repos).set_status(entry_id, Status.RETIRED, actor, reason.strip())

    def review_queue(self, repos: list[str] | None = None) -> list[Entry]:
        return [e for s in self.base.stores(repos) for e in s.entries((Status.REVIEW, Status.CANDIDATE))]

    def resolve(self, entry_id: str, keep: bool, reason: str = "", repos: list[str] | None = None,
                actor: str = "") -> Entry:
        """Settle a review: keep the entry (active; the entries it contradicted retire, losing to it) or
        reject it (retired; partners left with no other conflict become active again). `actor` is the
        reviewer, recorded on an agent's entry (`reviewed_by`) and in its history: a person's decision is
        the only way an agent's entry becomes active."""
        store = self.base.find(entry_id, repos)
        entry = store.get(entry_id)
        if entry.source_kind == SourceKind.AGENT.value and not actor.strip():
            raise KnowledgeInputError("reviewing an agent's entry needs the reviewer's name")
        if entry.status not in (Status.REVIEW.value, Status.CANDIDATE.value):
            raise KnowledgeInputError(f"entry {entry_id} is {entry.status}, not waiting for review")
        if not keep:
            if entry.source_kind == SourceKind.AGENT.value:
                store.update(entry_id, actor, "review: rejected", lambda e: _reviewed(e, Review.REJECTED, actor))
            store.set_status(entry_id, Status.RETIRED, actor, reason or "rejected in review")
            for partner in entry.conflicts_with:
                self._drop_conflict(store, partner, entry_id, actor)
            return store.get(entry_id)
        for partner in entry.conflicts_with:
            if store.has(partner) and store.get(partner).status != Status.RETIRED.value:
                store.set_status(partner, Status.RETIRED, actor, f"contradicted {entry_id}, which review kept")

        def accept(e: Entry) -> None:
            if e.source_kind == SourceKind.AGENT.value:
                _reviewed(e, Review.APPROVED, actor)
            e.status, e.conflicts_with = Status.ACTIVE.value, []

        return store.update(entry_id, actor, reason or "kept in review", accept, bump=True)

    def _drop_conflict(self, store: KnowledgeStore, entry_id: str, gone: str, actor: str) -> None:
        if not store.has(entry_id):
            return

        def drop(e: Entry) -> None:
            e.conflicts_with = [c for c in e.conflicts_with if c != gone]
            if not e.conflicts_with and e.status == Status.REVIEW.value:
                e.status = Status.ACTIVE.value  # an agent's unreviewed entry stays a candidate (the store's rule)

        store.update(entry_id, actor, f"{gone} was rejected in review", drop, bump=True)

    def feedback(self, entry_ids: list[str], rating: float | None, repos: list[str] | None = None,
                 voter: str = "feedback", include_global: bool = True) -> list[str]:
        """`voter`'s vote on each entry an answer used: up unless the rating is zero or negative. One vote per
        voter per entry (a repeat replaces it); ids outside `repos` (and the global store unless
        `include_global`) are skipped like unknown ones."""
        step = FEEDBACK_STEP * (1.0 if rating is None or rating > 0 else -1.0)
        moved = []
        for entry_id in dict.fromkeys(entry_ids):
            store = next((s for s in self.base.stores(repos, include_global) if s.has(entry_id)), None)
            if store is None:
                continue
            store.vote(entry_id, voter, step)
            moved.append(entry_id)
        return moved

    def list(self, repos: list[str] | None = None, statuses: tuple[Status, ...] = (), query: str = "",
             limit: int = 100) -> list[Entry]:
        out: list[Entry] = []
        for store in self.base.stores(repos):
            out += store.search(query, limit, statuses or tuple(Status)) if query else store.entries(statuses)
        return sorted(out, key=lambda e: -e.trust)[:limit]

    def show(self, entry_id: str, repos: list[str] | None = None) -> dict[str, Any]:
        store = self.base.find(entry_id, repos)
        entry = store.get(entry_id)
        signals = store.scorer.signals(entry, self.clock())
        return {"entry": entry.to_dict(), "trust_now": store.scorer.score(entry, self.clock()),
                "signals": signals.__dict__, "history": store.history(entry_id)}


def _reviewed(entry: Entry, outcome: Review, reviewer: str) -> None:
    entry.review, entry.reviewed_by = outcome.value, reviewer.strip()

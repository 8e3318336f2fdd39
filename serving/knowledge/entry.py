"""One knowledge entry and its enums: what it says, what it is about, where it came from, how it fares."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from semantica.schema import ParsableEnum


class Kind(ParsableEnum):
    DECISION = "decision"
    RULE = "rule"
    FACT = "fact"
    HOWTO = "how-to"


class Status(ParsableEnum):
    """candidate (found, not yet promoted) -> active (may be injected) <-> review (a conflict waits for a
    person) -> retired (kept, readable, with its reason)."""

    CANDIDATE = "candidate"
    ACTIVE = "active"
    REVIEW = "review"
    RETIRED = "retired"


class SourceKind(ParsableEnum):
    """Who said it: reliability per kind is `knowledge.source_reliability`."""

    PERSON = "person"
    ADR = "adr"
    DOC = "doc"
    AGENT = "agent"


class Verification(ParsableEnum):
    """unchecked: no snapshot yet; unverified: a snapshot, but the scope names nothing to check (a
    repository-wide claim); green: every path and symbol exists; failed: one is gone."""

    UNCHECKED = "unchecked"
    UNVERIFIED = "unverified"
    GREEN = "green"
    FAILED = "failed"


class Review(ParsableEnum):
    """A person's review of an entry an agent wrote: `pending` until `knowledge review ID --keep/--reject`.
    `not_needed`: a person, an ADR or a doc wrote it."""

    NOT_NEEDED = "not_needed"
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"


GLOBAL = ""
"""The `repo` of an entry in the global store (about no one repository)."""


def now_utc() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def iso(moment: dt.datetime | None) -> str:
    return moment.isoformat(timespec="seconds") if moment else ""


def parse_iso(text: str) -> dt.datetime | None:
    if not text:
        return None
    moment = dt.datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


@dataclass
class Entry:
    """A knowledge entry. `paths` may hold globs; `symbols` are names as written (`Class.method`, `func()`)."""

    id: str
    title: str
    text: str
    kind: str = Kind.FACT.value
    repo: str = GLOBAL
    paths: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    source_kind: str = SourceKind.PERSON.value
    source_ref: str = ""  # a person's name, the ADR/doc path, the agent and its query
    evidence: list[str] = field(default_factory=list)  # commits, test ids, benchmark files
    evidence_resolved: list[str] = field(default_factory=list)  # the evidence found in the snapshot (what counts)
    review: str = Review.NOT_NEEDED.value
    reviewed_by: str = ""
    created: str = ""
    updated: str = ""
    last_verified: str = ""
    last_used: str = ""
    verification: str = Verification.UNCHECKED.value
    verify_notes: list[str] = field(default_factory=list)
    pinned: bool = False
    votes: float = 0.0
    uses: int = 0
    status: str = Status.ACTIVE.value
    retire_reason: str = ""
    below_floor_since: str = ""
    conflicts_with: list[str] = field(default_factory=list)
    version: int = 1
    trust: float = 0.0

    JSON_FIELDS = ("paths", "symbols", "evidence", "evidence_resolved", "verify_notes", "conflicts_with")

    @property
    def author_kind(self) -> str:
        """Who wrote it: `agent` or `human` (a person, or an ADR / doc a person committed)."""
        return "agent" if self.source_kind == SourceKind.AGENT.value else "human"

    @property
    def needs_review(self) -> bool:
        """An agent's entry is never active, injected or promoted before a person approved it."""
        return self.source_kind == SourceKind.AGENT.value and self.review != Review.APPROVED.value

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_row(self) -> dict[str, Any]:
        row = self.to_dict()
        for name in self.JSON_FIELDS:
            row[name] = json.dumps(row[name], ensure_ascii=False)
        row["pinned"] = int(self.pinned)
        return row

    @staticmethod
    def from_row(row: dict[str, Any]) -> Entry:
        values = {k: v for k, v in dict(row).items() if v is not None}  # a column added later: its default
        for name in Entry.JSON_FIELDS:
            values[name] = json.loads(values.get(name) or "[]")
        values["pinned"] = bool(values["pinned"])
        if "review" not in values and values.get("source_kind") == SourceKind.AGENT.value:
            values["review"] = Review.PENDING.value  # an agent's entry stored before reviews existed: not approved
        return Entry(**values)

    def citation(self) -> str:
        return f"knowledge:{self.id}"

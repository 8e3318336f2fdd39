"""The trust score of an entry: a documented, bounded formula over its signals.

    trust = min(1, failed x (w_source·reliability + w_verify·verified + w_evidence·evidence
                           + w_refs·references + w_fresh·freshness) + w_pin·pinned)

    reliability = knowledge.source_reliability[source kind]            (0..1; an agent's entry a person
                                                                        approved in review: a person's)
    verified    = 1 green, 0.5 unchecked or unverified (nothing to check), 0 failed  (newest snapshot)
    evidence    = min(1, evidence items that resolved in the snapshot / evidence_saturation)
    references  = clamp((uses + votes) / references_saturation, -1, 1)  (bad feedback lowers trust)
    freshness   = 0.5 ** (days since last used, edited or created / half_life_days)
    failed      = failed_factor while verification fails, else 1        (a demoted entry)

The five base weights sum to 1, so an entry's trust stays in [0, 1] and reads as a share; they are the
formula's own constants (below), and only the half-life (`knowledge.trust_half_life_days`) and the source
reliabilities are deployment settings.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from semantica.config import KnowledgeConfig
from serving.knowledge.entry import Entry, Review, SourceKind, Verification, parse_iso

VERIFIED_VALUE = {Verification.GREEN.value: 1.0, Verification.UNCHECKED.value: 0.5,
                  Verification.UNVERIFIED.value: 0.5, Verification.FAILED.value: 0.0}
SECONDS_PER_DAY = 86400.0


@dataclass(frozen=True)
class TrustWeights:
    """The formula's weights: the five base shares sum to 1 so that trust reads as a share of full trust."""

    source: float = 0.30  # x source reliability (knowledge.source_reliability by source kind)
    verification: float = 0.25  # x 1 when the scope checked green against the newest snapshot, 0.5 unchecked, 0 failed
    evidence: float = 0.15  # x min(1, evidence items / evidence_saturation)
    references: float = 0.10  # x clamp((uses + votes) / references_saturation, -1, 1): bad feedback lowers trust
    freshness: float = 0.20  # x 0.5 ** (days since last used, edited or created / half-life)
    pin: float = 0.30  # added once for a pinned entry (still capped at 1): a pin lifts a fresh entry over 0.5
    failed_factor: float = 0.5  # the whole score x this while verification fails (a demoted entry)
    evidence_saturation: int = 3  # evidence items that count as full evidence
    references_saturation: int = 10  # uses + votes that count as full references


TRUST_WEIGHTS = TrustWeights()


@dataclass
class TrustSignals:
    """Each signal in [0, 1] (references in [-1, 1]): what `score` weighs, shown by `knowledge show`."""

    reliability: float
    verified: float
    evidence: float
    references: float
    freshness: float
    pinned: bool
    failed: bool


class TrustScorer:
    """`score(entry, now)` -> trust in [0, 1] (see the module docstring for the formula)."""

    def __init__(self, config: KnowledgeConfig) -> None:
        self.config = config
        self.weights = TRUST_WEIGHTS
        self.half_life_days = config.trust_half_life_days
        if self.half_life_days <= 0:
            raise ValueError(f"knowledge.trust_half_life_days must be > 0, got {self.half_life_days}")

    def signals(self, entry: Entry, now: dt.datetime) -> TrustSignals:
        w = self.weights
        vouched = entry.source_kind == SourceKind.AGENT.value and entry.review == Review.APPROVED.value
        kind = SourceKind.PERSON.value if vouched else entry.source_kind
        reliability = float(self.config.source_reliability.get(kind, 0.0))
        references = (entry.uses + entry.votes) / max(1, w.references_saturation)
        return TrustSignals(
            reliability=reliability,
            verified=VERIFIED_VALUE.get(entry.verification, 0.0),
            evidence=min(1.0, len(entry.evidence_resolved) / max(1, w.evidence_saturation)),
            references=max(-1.0, min(1.0, references)),
            freshness=self.freshness(entry, now),
            pinned=entry.pinned,
            failed=entry.verification == Verification.FAILED.value,
        )

    def freshness(self, entry: Entry, now: dt.datetime) -> float:
        """Halves every `trust_half_life_days` since the entry was last used, edited or created."""
        moments = [m for m in (parse_iso(entry.last_used), parse_iso(entry.updated), parse_iso(entry.created)) if m]
        if not moments:
            return 1.0
        days = max(0.0, (now - max(moments)).total_seconds() / SECONDS_PER_DAY)
        return 0.5 ** (days / self.half_life_days)

    def score(self, entry: Entry, now: dt.datetime) -> float:
        s, w = self.signals(entry, now), self.weights
        base = (w.source * s.reliability + w.verification * s.verified + w.evidence * s.evidence
                + w.references * s.references + w.freshness * s.freshness)
        if s.failed:
            base *= w.failed_factor
        return round(max(0.0, min(1.0, base + (w.pin if s.pinned else 0.0))), 6)

"""BM25 over past commit messages; the most similar commits vote for the files they changed.

BM25 is bm25s (in-process, scipy sparse): the index of one snapshot is rebuilt from its cached records in
about a second per 10,000 commits, so it is never updated in place and its statistics (document frequencies,
lengths) come only from commits at or before the snapshot. Tokens are the code-aware tokens that the lexical
index uses (semantica/stores/tokenizer.py), so `raw_decode` in an issue matches `JSONDecoder.raw_decode` in a message.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from semantica.config import HistoryConfig
from semantica.stores.history.records import CommitRecord
from semantica.stores.tokenizer import tokenize

SECONDS_PER_DAY = 86400.0
RECENT_VOTES = 64  # queries whose votes a HistoryIndex keeps (one query asks several times)
EXPLAIN_COMMITS = 3  # each ranked file keeps at most this many voters, most similar first (its explanation)


@dataclass(frozen=True)
class Voter:
    """A past commit that voted for a hit (what an explanation shows)."""

    sha: str
    subject: str
    date: str
    similarity: float

    def to_dict(self) -> dict[str, object]:
        return {"sha": self.sha, "subject": self.subject, "date": self.date, "similarity": round(self.similarity, 4)}


@dataclass
class Vote:
    """One file (`path`) and its summed vote; `voters` strongest first."""

    key: str
    score: float
    voters: list[Voter] = field(default_factory=list)


@dataclass
class HistoryVotes:
    """Files ranked by vote, best first."""

    files: list[Vote] = field(default_factory=list)


def iso_date(unix_seconds: int) -> str:
    return dt.datetime.fromtimestamp(unix_seconds, dt.UTC).strftime("%Y-%m-%d")


class HistoryIndex:
    """The commits of one snapshot (all at or before `as_of`, a unix time) searchable by message."""

    def __init__(self, records: list[CommitRecord], as_of: int, config: HistoryConfig,
                 live_files: set[str] | None = None, token_cache: dict[str, list[str]] | None = None) -> None:
        """`token_cache` (sha -> message tokens) lets many snapshots of one repository tokenize each commit once."""
        self.live_files = live_files
        self.records = records
        self.as_of = as_of
        self.config = config
        self._bm25: Any = None  # bm25s.BM25, imported when first built
        self._recent_votes: OrderedDict[str, HistoryVotes] = OrderedDict()
        self._votes_lock = threading.Lock()
        cache = token_cache if token_cache is not None else {}
        corpus = []
        for record in records:
            if record.sha not in cache:
                cache[record.sha] = tokenize(record.text()) or ["\x00"]
            corpus.append(cache[record.sha])
        if records:
            import bm25s

            self._bm25 = bm25s.BM25()
            self._bm25.index(corpus, show_progress=False)

    def __len__(self) -> int:
        return len(self.records)

    def similar(self, query: str, k: int | None = None) -> list[tuple[CommitRecord, float]]:
        """The `k` (default `top_commits`) commits whose messages best match `query`, with their BM25 scores."""
        k = self.config.top_commits if k is None else k
        terms = tokenize(query)
        if self._bm25 is None or not terms or k <= 0:
            return []
        scores = np.asarray(self._bm25.get_scores(terms), dtype=np.float64)
        top = np.argsort(-scores, kind="stable")[:k]
        return [(self.records[i], float(scores[i])) for i in top if scores[i] > 0]

    def weight(self, record: CommitRecord, score: float, best: float) -> float:
        return commit_weight(record, score, best, self.as_of, self.config)

    def votes(self, query: str) -> HistoryVotes:
        """Files voted for by the most similar past commits. The last few queries' votes are kept:
        the history retriever (lists, voters) and the localizer's history features ask for the same query."""
        with self._votes_lock:
            if query in self._recent_votes:
                self._recent_votes.move_to_end(query)
                return self._recent_votes[query]
        votes = vote(self.similar(query), self.as_of, self.config, self.live_files)
        with self._votes_lock:
            self._recent_votes[query] = votes
            if len(self._recent_votes) > RECENT_VOTES:
                self._recent_votes.popitem(last=False)
        return votes


def vote(similar: list[tuple[CommitRecord, float]], as_of: int, config: HistoryConfig,
         live_files: set[str] | None = None) -> HistoryVotes:
    """The votes of `similar` (commits and BM25 scores, best first), weighted by similarity and age as of `as_of`;
    a pure function, so a replay over stored similar commits votes exactly as the live index does."""
    similar = similar[: config.top_commits]
    if not similar:
        return HistoryVotes()
    best = similar[0][1]
    files: dict[str, Vote] = {}
    for record, score in similar:
        weight = commit_weight(record, score, best, as_of, config)
        voter = Voter(record.sha, record.display_subject(), iso_date(record.author_time), weight)
        share = weight / (max(1, len(record.files)) ** config.share_exponent)
        for path in record.files:
            if live_files is not None and path not in live_files:
                continue
            found = files.setdefault(path, Vote(path, 0.0))
            found.score += share
            found.voters.append(voter)
    ranked = sorted(files.values(), key=lambda v: (-v.score, v.key))[: config.k]
    for item in ranked:
        item.voters = sorted(item.voters, key=lambda v: -v.similarity)[:EXPLAIN_COMMITS]
    return HistoryVotes(ranked)


def commit_weight(record: CommitRecord, score: float, best: float, as_of: int, config: HistoryConfig) -> float:
    """Similarity relative to the best match, decayed by age (half-life 0 = no decay)."""
    weight = (score / best) ** config.similarity_power if best > 0 else 0.0
    if config.half_life_days > 0:
        weight *= 0.5 ** (max(0.0, (as_of - record.author_time) / SECONDS_PER_DAY) / config.half_life_days)
    return weight

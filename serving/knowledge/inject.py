"""`KnowledgeInjector`: the query-time use of knowledge entries (docs/knowledge.md).

lookup   FTS5 over the asked repositories' stores and the global one; an entry counts when it shares at
         least `min_matched_terms` terms with the query (fewer for a shorter query) and its trust now is at
         or above `threshold`; the best `max_entries` by (shared terms, trust).
boost    a hit of the answer (the first k) whose symbol, or whose exact file, an entry names: score x
         (1 + HIT_BOOST x trust), moved up past the lower-scored hits just above it (directory and glob scopes
         are verified but boost nothing: "all of serving/" is no ranking signal).
dedupe   a code hit of the very document an entry came from, or whose text holds the entry's claim, is dropped:
         the entry already says it.
review   an agent's entry no person approved is never looked up (the stores also never make it active).
render   entries as cited blocks (`# knowledge:<id> [kind] trust=... source=... verified=... scope=...
         author=human|agent review=... content=untrusted`) within
         `max_context_share` of the context budget, put before the code blocks.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from semantica.config import Config
from semantica.hits import Hit
from semantica.runtime.token_count import TokenCounter
from semantica.schema import Chunk
from semantica.snapshot import Snapshot, SnapshotSet
from serving.knowledge.entry import GLOBAL, Entry, iso
from serving.knowledge.service import KnowledgeService
from serving.knowledge.store import entry_terms, query_terms

_SPACE = re.compile(r"\s+")
UNREADABLE = (-1,)
LOOKUP_CANDIDATES = 20  # FTS5 matches read per store before trust filtering
HIT_BOOST = 0.15  # a hit in an injected entry's scope: score x (1 + HIT_BOOST x trust), so at most +15%
log = logging.getLogger(__name__)


@dataclass
class UsedEntry:
    entry: Entry
    trust: float
    matched: int

    def header(self) -> str:
        e = self.entry
        source = f"{e.source_kind}" + (f":{e.source_ref}" if e.source_ref else "")
        scope = ", ".join([*e.paths, *e.symbols]) or (e.repo or "global")
        review = e.review + (f" by {e.reviewed_by}" if e.reviewed_by else "")
        return (f"# {e.citation()} [{e.kind}] trust={self.trust:.2f} source={source} "
                f"verified={e.last_verified or 'never'} ({e.verification}) scope={scope} author={e.author_kind} "
                f"review={review} content=untrusted")

    def render(self) -> str:
        return f"{self.header()}\n{self.entry.title}\n{self.entry.text}"

    def to_dict(self) -> dict[str, Any]:
        e = self.entry
        return {"id": e.id, "repo": e.repo, "title": e.title, "text": e.text, "kind": e.kind, "trust": round(self.trust, 4),
                "source": {"kind": e.source_kind, "ref": e.source_ref}, "author_kind": e.author_kind,
                "review": e.review, "reviewed_by": e.reviewed_by, "last_verified": e.last_verified,
                "verification": e.verification, "paths": e.paths, "symbols": e.symbols, "citation": e.citation()}


@dataclass
class InjectedKnowledge:
    entries: list[UsedEntry]
    text: str = ""
    tokens: int = 0

    def to_list(self) -> list[dict[str, Any]]:
        return [u.to_dict() for u in self.entries]


class KnowledgeInjector:
    def __init__(self, config: Config, service: KnowledgeService | None = None,
                 snapshots: SnapshotSet | None = None) -> None:
        self.config = config
        self.settings = config.knowledge
        self.count = TokenCounter(config.encoder.model_path).count  # the context budget's unit
        self._service = service
        self._snapshots = snapshots  # the pipeline's own: verifying an added entry reuses its loaded tables
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="knowledge-uses")
        self._pending: list[Future[None]] = []
        self._pending_lock = threading.Lock()

    @property
    def service(self) -> KnowledgeService:
        if self._service is None:
            self._service = KnowledgeService(self.config, snapshots=self._snapshots)
        return self._service

    @property
    def enabled(self) -> bool:
        return self.settings.enabled

    def cache_tag(self, snapshots: list[Snapshot]) -> tuple[int, ...]:
        """Part of the response cache key: a new, edited or re-scored entry must not serve an old answer."""
        if not self.enabled:
            return ()
        try:
            return self.service.base.revision([s.repo for s in snapshots])
        except sqlite3.Error:  # the lookup reports it (degraded); such an answer is not cached
            return UNREADABLE

    def lookup(self, query: str, repos: list[str]) -> list[UsedEntry]:
        if not self.enabled:
            return []
        terms = set(query_terms(query))
        if not terms:
            return []
        need = min(self.settings.min_matched_terms, len(terms))
        now = self.service.clock()
        found: list[UsedEntry] = []
        for store in self.service.base.stores(repos):
            for entry in store.search(query, LOOKUP_CANDIDATES):
                matched = len(terms & set(entry_terms(entry).split()))
                trust = store.scorer.score(entry, now)
                if entry.needs_review:  # an agent's entry no person approved: never injected
                    continue
                if matched >= need and trust >= self.settings.threshold:
                    found.append(UsedEntry(entry, trust, matched))
        found.sort(key=lambda u: (-u.matched, -u.trust, u.entry.id))
        return found[: self.settings.max_entries]

    def boost(self, hits: list[Hit], used: list[UsedEntry], chunks: dict[str, Chunk], k: int) -> list[Hit]:
        """A hit among the first `k` that an entry names gets score x (1 + HIT_BOOST x trust) and moves up past
        the unboosted hits just above it that it now outscores. Nothing else moves: the order that came in is
        not always by score (exact graph answers lead, planning may diversify), so it is never re-sorted as a
        whole, and a hit below `k` is never pulled in: knowledge orders the answer, retrieval chooses it."""
        if not used:
            return hits
        out = list(hits)
        boosted: set[str] = set()
        for i, hit in enumerate(hits[:k]):
            chunk = chunks.get(hit.chunk_id) or hit.chunk
            trust = max((u.trust for u in used if chunk is not None and _about(u.entry, chunk)), default=0.0)
            if not trust:
                continue
            factor = 1.0 + HIT_BOOST * trust
            hit.score *= factor
            hit.explanation = f"{hit.explanation} knowledge boost x{factor:.3f}".strip()
            boosted.add(hit.chunk_id)
            j = i  # earlier moves only swap positions below i: hit i is still at i
            while j > 0 and out[j - 1].chunk_id not in boosted and out[j - 1].score < hit.score:
                out[j - 1], out[j] = out[j], out[j - 1]
                j -= 1
        return out

    def dedupe(self, hits: list[Hit], used: list[UsedEntry], chunks: dict[str, Chunk]) -> list[Hit]:
        """Drop code hits that repeat an injected entry: the document it came from, or a chunk holding its text."""
        if not used:
            return hits
        sources = {(u.entry.repo, u.entry.source_ref) for u in used if u.entry.source_ref}
        claims = [_norm(u.entry.text) for u in used if len(u.entry.text) >= 20]
        kept = []
        for hit in hits:
            chunk = chunks.get(hit.chunk_id) or hit.chunk
            if chunk is not None and ((chunk.repo, chunk.path) in sources
                                      or any(claim in _norm(chunk.content) for claim in claims)):
                continue
            kept.append(hit)
        return kept

    def render(self, used: list[UsedEntry], budget: int) -> InjectedKnowledge:
        """The entries that fit in `max_context_share` x budget, best first."""
        limit = int(budget * self.settings.max_context_share)
        out = InjectedKnowledge([])
        blocks = []
        for u in used:
            text = u.render()
            tokens = self.count(text)
            if out.tokens + tokens > limit:
                continue
            out.entries.append(u)
            blocks.append(text)
            out.tokens += tokens
        out.text = "\n\n".join(blocks)
        return out

    def mark_used(self, injected: InjectedKnowledge) -> None:
        """Uses count as references and keep an entry fresh; they do not empty the query cache. Written by a
        background thread: a query never waits for a store another process is writing (`flush` waits)."""
        if not injected.entries:
            return
        now = iso(self.service.clock())
        with self._pending_lock:
            self._pending = [f for f in self._pending if not f.done()]
            self._pending.append(self._writer.submit(self._record_uses, [u.entry for u in injected.entries], now))

    def _record_uses(self, entries: list[Entry], now: str) -> None:
        def use(e: Entry) -> None:
            e.uses += 1
            e.last_used = now

        for entry in entries:
            try:
                self.service.base.store(entry.repo or GLOBAL).update(entry.id, "query", "used", use, revise=False,
                                                                     searchable=False)
            except (sqlite3.Error, LookupError) as exc:  # a use is a hint; losing one is harmless
                log.warning("knowledge entry %s: use not recorded: %s", entry.id, exc)

    def flush(self) -> None:
        """Wait for the recorded uses (tests, benchmarks, shutdown)."""
        with self._pending_lock:
            pending, self._pending = self._pending, []
        for future in pending:
            future.result()

    def feedback(self, entry_ids: list[str], rating: float | None, repos: list[str] | None, voter: str = "feedback",
                 include_global: bool = True) -> list[str]:
        return self.service.feedback(entry_ids, rating, repos, voter, include_global)


def _about(entry: Entry, chunk: Chunk) -> bool:
    if entry.repo not in (GLOBAL, chunk.repo):
        return False
    if chunk.path in entry.paths:
        return True
    symbol = chunk.symbol or ""
    return any(symbol and (symbol == s.removesuffix("()") or symbol.endswith("." + s.removesuffix("()")))
               for s in entry.symbols)


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()

"""Symbol retrieval: exact fully-qualified name > exact name > prefix > identifier parts.

Fed by the intent's expansions (CamelCase, snake_case and dotted names in the query); a query with
none falls back to its plain words for the exact-name tiers only, and so does a query naming more
than `retrieval.symbol_fuzzy_max_names` identifiers (a long bug report).
"""

from __future__ import annotations

import bisect
import heapq
from collections import Counter, defaultdict

from semantica.runtime import linear_regex
from semantica.schema import Chunk, Symbol
from semantica.stores.tokenizer import tokenize
from serving.retrievers.base import BaseRetriever, RetrievalQuery, ScoredList

TIER_FQN = 5.0
TIER_QUALNAME = 4.0
TIER_NAME_NOCASE = 3.0
TIER_PREFIX = 2.0
TIER_PARTS = 1.0
MIN_PREFIX_CHARS = 3
MIN_WORD_CHARS = 3
MAX_QUERY_NAMES = 32
SORTED_PER_RESULT = 4  # symbols sorted per wanted chunk before all are (a chunk holds several symbols)
_WORD = linear_regex.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


class SymbolRetriever(BaseRetriever):
    """An in-memory symbol table with exact, prefix and part lookups."""

    name = "symbol"  # its registry name

    def __init__(self, symbols: list[Symbol], chunk_by_id: dict[str, Chunk], fuzzy_max_names: int = 4) -> None:
        super().__init__(chunk_by_id)
        self.fuzzy_max_names = fuzzy_max_names
        self.symbols = [s for s in symbols if s.chunk_id]
        self.by_exact: dict[str, list[int]] = defaultdict(list)
        self.by_name_lower: dict[str, list[int]] = defaultdict(list)
        self.by_part: dict[str, set[int]] = defaultdict(set)
        for i, s in enumerate(self.symbols):
            for key in {s.symbol_id, s.fqn, f"{s.module}.{s.qualname}", s.qualname, s.name}:
                self.by_exact[key].append(i)
            self.by_name_lower[s.name.lower()].append(i)
            for part in tokenize(s.qualname):
                self.by_part[part].add(i)
        self.sorted_names = sorted(self.by_name_lower)

    def _query_names(self, query: RetrievalQuery) -> tuple[list[str], bool]:
        expansions = query.expansions
        names = [*expansions.symbols, *expansions.modules]
        if names:
            return names[:MAX_QUERY_NAMES], True
        words = [w.strip(".") for w in _WORD.findall(query.text) if len(w) >= MIN_WORD_CHARS]
        return list(dict.fromkeys(words))[:MAX_QUERY_NAMES], False

    def _search(self, query: RetrievalQuery, k: int) -> ScoredList:
        names, from_expansions = self._query_names(query)
        # prefix and part matches help a short identifier query; over a long bug report they are noise
        fuzzy = from_expansions and len(names) <= self.fuzzy_max_names
        best: dict[int, float] = {}

        def offer(index: int, score: float) -> None:
            if score > best.get(index, 0.0):
                best[index] = score

        for name in names:
            last = name.rsplit(".", 1)[-1]
            for i in self.by_exact.get(name, ()):
                s = self.symbols[i]
                exact_fqn = name in (s.symbol_id, s.fqn, f"{s.module}.{s.qualname}") or ("." in name and name == s.qualname)
                offer(i, TIER_FQN if exact_fqn else TIER_QUALNAME)
            for i in self.by_name_lower.get(last.lower(), ()):
                offer(i, TIER_NAME_NOCASE)
            if not fuzzy:
                continue
            lowered = last.lower()
            if len(lowered) >= MIN_PREFIX_CHARS:
                start = bisect.bisect_left(self.sorted_names, lowered)
                for key in self.sorted_names[start:]:
                    if not key.startswith(lowered):
                        break
                    for i in self.by_name_lower[key]:
                        offer(i, TIER_PREFIX + len(lowered) / len(key) * 0.5)
            parts = [p for p in tokenize(name) if p != name.lower()]
            if parts:
                counts: Counter[int] = Counter()
                for part in parts:  # a common part ("test", "bean") names tens of thousands of symbols: counted in C
                    counts.update(self.by_part.get(part, ()))
                n = len(parts)
                for i, hits in counts.items():  # offer(), inlined: this loop runs tens of thousands of times
                    score = TIER_PARTS + hits / n * 0.5
                    if score > best.get(i, 0.0):
                        best[i] = score
        return self._first_chunks(best, k)

    def _first_chunks(self, best: dict[int, float], k: int) -> ScoredList:
        """The first `k` distinct chunks of `best` by (-score, symbol id): only the symbols scoring at least the
        `k * SORTED_PER_RESULT`-th best score are sorted (ties included), all of them when those give fewer chunks."""
        wanted = k * SORTED_PER_RESULT
        if len(best) > wanted:
            floor = heapq.nlargest(wanted, best.values())[-1]
            head = [item for item in best.items() if item[1] >= floor]
            found = self._distinct(head, k)
            if len(found) >= k:
                return found
        return self._distinct(list(best.items()), k)

    def _distinct(self, items: list[tuple[int, float]], k: int) -> ScoredList:
        out: ScoredList = []
        seen: set[str] = set()
        for i, score in sorted(items, key=lambda item: (-item[1], self.symbols[item[0]].symbol_id)):
            chunk_id = self.symbols[i].chunk_id
            if chunk_id not in seen:
                seen.add(chunk_id)
                out.append((chunk_id, score))
            if len(out) >= k:
                break
        return out

"""Weighted reciprocal-rank fusion with intent weights, consensus and expansion boosts (the RFC).

For each strategy s that returned chunk c at 1-based rank r_s(c):

    weights      w_s   = sum_i p(i) * profile[i][s]                      (i over the 5 intents)
                 w_graph  *= flow_boost    if dominant is flow   and p(flow)   > FLOW_BOOST_MIN_P
                 w_symbol *= symbol_boost  if dominant is symbol and p(symbol) > SYMBOL_BOOST_MIN_P
                 w_s   /= sum_s w_s
    RRF          rrf_s(c) = w_s / (k_s + r_s(c))
    fused        f(c)     = sum_s rrf_s(c)                         (strategies that returned c)
    consensus    C(c)     = min(CONSENSUS_CAP, 1 + CONSENSUS_BETA * (sqrt(M) - 1)) * (0.5 + 0.5 / (1 + avg_rank / q0))
                            M = strategies that returned c, avg_rank = mean of its ranks
    expansion    E(c)     = EXPANSION_BOOST if c's symbol or path matches a query expansion else 1
    score        S(c)     = f(c) * C(c) * E(c)

Hits are sorted by S descending, ties broken by best (lowest) rank, then chunk id. The list is cut
at `max(k, cutoffs[dominant intent])`: the intent cutoff bounds what the rerankers see; a caller
asking for more than that (an explicit larger k) gets k hits. The pipeline trims to k at the end.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from semantica.config import FusionConfig
from semantica.feature_schema import FEATURE_STRATEGIES
from semantica.hits import ABSENT_RANK, ChunkMeta, Hit, RankedList
from semantica.schema import Chunk, module_of
from serving.core.intent import INTENTS, Expansions, Intent, IntentResult

GRAPH = "graph"
"""The retriever the flow intent boosts (fusion.flow_boost)."""
SYMBOL = "symbol"
"""The retriever the symbol intent boosts (fusion.symbol_boost)."""

# the formula's constants (the RFC's values, not per-deployment settings)
FLOW_BOOST_MIN_P = 0.2  # the flow boost applies when flow is dominant with p(flow) above this
SYMBOL_BOOST_MIN_P = 0.3  # the symbol boost applies when symbol is dominant with p(symbol) above this
EXPANSION_BOOST = 1.1  # a hit matching a query expansion (symbol, path or module): score x this
CONSENSUS_BETA = 0.3  # agreement term of the consensus factor: min(cap, 1 + beta * (sqrt(M) - 1)) ...
CONSENSUS_CAP = 1.5  # ... at most this


def consensus_factor(
    n_strategies: int, avg_rank: float, beta: float, cap: float, q0: float
) -> float:
    """min(cap, 1 + beta (sqrt(M) - 1)) x (0.5 + 0.5 / (1 + avg_rank / q0)); 0 when M = 0.

    With avg_rank = 0 the quality term is 1: M=1 -> 1.00, 2 -> 1.124, 3 -> 1.220, 4 -> 1.300
    (beta 0.3, cap 1.5).
    """
    if n_strategies <= 0:
        return 0.0
    agreement = min(cap, 1.0 + beta * (math.sqrt(n_strategies) - 1.0))
    quality = 0.5 + 0.5 / (1.0 + max(0.0, avg_rank) / q0)
    return agreement * quality


class ExpansionMatcher:
    """Whether a chunk matches a query expansion, case-insensitively (expansions lowered once).

    symbol: equal, or one is a dotted suffix of the other (`raw_decode` ~ `JSONDecoder.raw_decode`);
    path: equal, or one ends with `/` + the other (`config.py` ~ `semantica/config.py`), or the
    expansion is a directory containing the chunk; module: the chunk's module (from its path)
    equals it or ends with `.` + it.
    """

    def __init__(self, expansions: Expansions) -> None:
        self.symbols = [(s, s.lower().replace("::", ".")) for s in expansions.symbols]
        self.paths = [(p, p.lower().replace("\\", "/").strip("/")) for p in expansions.paths]
        self.paths = [(p, low) for p, low in self.paths if low]
        self.modules = [(m, m.lower()) for m in expansions.modules]
        self.empty = not (self.symbols or self.paths or self.modules)

    def match(self, meta: ChunkMeta) -> str:
        """A short description of the first matching expansion, '' when none."""
        if self.empty:
            return ""
        symbol = meta.symbol.lower().replace("::", ".")
        if symbol:
            for original, cand in self.symbols:
                if symbol == cand or symbol.endswith("." + cand) or cand.endswith("." + symbol):
                    return f"symbol {original}"
        path = meta.path.lower().replace("\\", "/")
        if path:
            for original, cand in self.paths:
                if path == cand or path.endswith("/" + cand) or path.startswith(cand + "/"):
                    return f"path {original}"
            if self.modules:
                module = module_of(path)
                for original, cand in self.modules:
                    if module == cand or module.endswith("." + cand):
                        return f"module {original}"
        return ""


class WeightedRRF:
    """`fuse(lists, intent, chunk_meta, k)` -> hits sorted by fused score, with features."""

    def __init__(self, config: FusionConfig | None = None) -> None:
        self.config = config or FusionConfig()
        c = self.config
        missing_k = [s for s in FEATURE_STRATEGIES if s not in c.rrf_k]
        if missing_k:
            raise ValueError(f"fusion.rrf_k lacks strategies {missing_k}")
        for s in FEATURE_STRATEGIES:
            if c.rrf_k[s] <= 0:
                raise ValueError(f"fusion.rrf_k.{s} must be > 0, got {c.rrf_k[s]}")
        for intent in INTENTS:
            profile = c.profiles.get(intent.value)
            if profile is None:
                raise ValueError(f"fusion.profiles lacks intent {intent.value!r}")
            lacking = [s for s in FEATURE_STRATEGIES if s not in profile]
            if lacking:
                raise ValueError(f"fusion.profiles.{intent.value} lacks strategies {lacking}")
            unknown = sorted(set(profile) - set(FEATURE_STRATEGIES))
            if unknown:
                raise ValueError(f"fusion.profiles.{intent.value}: unknown strategies {unknown}")
            if intent.value not in c.cutoffs:
                raise ValueError(f"fusion.cutoffs lacks intent {intent.value!r}")
        if c.consensus_q0 <= 0:
            raise ValueError(f"fusion.consensus_q0 must be > 0, got {c.consensus_q0}")

    # -- public helpers (tests, explanations) ---------------------------------------------------

    def consensus(self, n_strategies: int, avg_rank: float) -> float:
        c = self.config
        return consensus_factor(n_strategies, avg_rank, CONSENSUS_BETA, CONSENSUS_CAP, c.consensus_q0)

    def weights(self, intent: IntentResult | None, extra: Iterable[str] = (),
                multipliers: Mapping[str, float] | None = None) -> dict[str, float]:
        """Normalised per-strategy weights for this intent (see the module docstring). `extra` names
        registered retrievers beyond the four strategies: their weight is `fusion.extra_weights[name]`.
        A search mode's `multipliers` (serving/planning) scale the intent weights before normalising."""
        c = self.config
        intent = intent or IntentResult.pure(Intent.BALANCED)
        raw: dict[str, float] = {
            s: sum(intent.p(i) * c.profiles[i.value][s] for i in INTENTS) for s in FEATURE_STRATEGIES
        }
        for name in extra:
            if name not in c.extra_weights or name not in c.rrf_k:
                raise ValueError(f"unknown strategy {name!r}: not one of {', '.join(sorted(FEATURE_STRATEGIES))}, and no "
                                 f"fusion weight for a registered retriever (fusion.extra_weights.{name}, "
                                 f"fusion.rrf_k.{name})")
            raw[name] = float(c.extra_weights[name])
        if intent.dominant is Intent.FLOW and intent.p(Intent.FLOW) > FLOW_BOOST_MIN_P:
            raw[GRAPH] *= c.flow_boost
        if intent.dominant is Intent.SYMBOL and intent.p(Intent.SYMBOL) > SYMBOL_BOOST_MIN_P:
            raw[SYMBOL] *= c.symbol_boost
        for s, factor in (multipliers or {}).items():
            raw[s] *= factor
        total = sum(raw.values())
        if total <= 0:
            raise ValueError("fusion weights sum to 0: check fusion.profiles")
        return {s: w / total for s, w in raw.items()}

    def cutoff(self, intent: IntentResult | None, k: int | None = None) -> int:
        """How many hits `fuse` returns: max(k, cutoffs[dominant])."""
        dominant = intent.dominant if intent else Intent.BALANCED
        limit = int(self.config.cutoffs[dominant.value])
        return max(limit, k) if k is not None else limit

    # -- the work -------------------------------------------------------------------------------

    def fuse(
        self,
        lists: Mapping[str, RankedList],
        intent: IntentResult | None = None,
        chunk_meta: Mapping[str, ChunkMeta | Chunk] | None = None,
        k: int | None = None,
        multipliers: Mapping[str, float] | None = None,
    ) -> list[Hit]:
        """Fuse the strategies' ranked lists. `intent` None means a pure balanced intent; `multipliers`
        (a search mode's, serving/planning) scale the intent weights.

        A chunk listed twice by one strategy keeps its best rank. Ranks must be integers >= 1.
        Chunks missing from `chunk_meta` get size/depth 0 and no expansion boost.
        """
        scored, weights = self._scored(lists, intent, chunk_meta, k, multipliers)
        # features and explanations only for the hits that survive the cutoff
        return [self._hit(chunk_id, ranks, weights, matched, chunk_meta) for _, _, chunk_id, ranks, matched in scored]

    def scores(
        self,
        lists: Mapping[str, RankedList],
        intent: IntentResult | None = None,
        k: int | None = None,
        multipliers: Mapping[str, float] | None = None,
    ) -> list[tuple[str, float]]:
        """`fuse`'s (chunk id, score) pairs in its order, without building hits: localization fuses file
        and function keys that need no features or explanations (no metadata, so no expansion boost)."""
        scored, _ = self._scored(lists, intent, None, k, multipliers)
        return [(chunk_id, score) for score, _, chunk_id, _, _ in scored]

    def _scored(
        self,
        lists: Mapping[str, RankedList],
        intent: IntentResult | None,
        chunk_meta: Mapping[str, ChunkMeta | Chunk] | None,
        k: int | None,
        multipliers: Mapping[str, float] | None,
    ) -> tuple[list[tuple[float, int, str, dict[str, int], str]], dict[str, float]]:
        """(score, best rank, chunk id, ranks, matched expansion) sorted and cut, and the strategy weights."""
        if k is not None and k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        names = {key: str(key).strip().lower() for key in lists}  # the registered name, however it was spelled
        weights = self.weights(intent, [n for n in names.values() if n not in FEATURE_STRATEGIES], multipliers)
        matcher = ExpansionMatcher(intent.expansions if intent else Expansions())
        ranks_by_chunk: dict[str, dict[str, int]] = {}
        for key, ranked in lists.items():
            strategy = names[key]
            for chunk_id, rank in ranked or []:
                if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
                    raise ValueError(
                        f"{strategy}: rank of {chunk_id!r} must be an integer >= 1, got {rank!r}"
                    )
                seen = ranks_by_chunk.setdefault(chunk_id, {})
                if strategy not in seen or rank < seen[strategy]:
                    seen[strategy] = rank

        k_of = {s: self.config.rrf_k[s] for s in weights}
        scored: list[tuple[float, int, str, dict[str, int], str]] = []
        for chunk_id, ranks in ranks_by_chunk.items():
            fused = sum(weights[s] / (k_of[s] + r) for s, r in ranks.items())
            consensus = self.consensus(len(ranks), sum(ranks.values()) / len(ranks))
            meta = self._meta(chunk_meta, chunk_id)
            matched = matcher.match(meta) if meta else ""
            boost = EXPANSION_BOOST if matched else 1.0
            scored.append((fused * consensus * boost, min(ranks.values()), chunk_id, ranks, matched))
        scored.sort(key=lambda item: (-item[0], item[1], item[2]))
        return scored[: self.cutoff(intent, k)], weights

    @staticmethod
    def _meta(chunk_meta: Mapping[str, ChunkMeta | Chunk] | None, chunk_id: str) -> ChunkMeta | None:
        raw = chunk_meta.get(chunk_id) if chunk_meta else None
        return ChunkMeta.from_chunk(raw) if isinstance(raw, Chunk) else raw

    def _hit(
        self,
        chunk_id: str,
        ranks: dict[str, int],
        weights: dict[str, float],
        matched: str,
        chunk_meta: Mapping[str, ChunkMeta | Chunk] | None,
    ) -> Hit:
        c = self.config
        rrf = {s: weights[s] / (c.rrf_k[s] + r) for s, r in ranks.items()}
        fused = sum(rrf.values())
        n = len(ranks)
        best = min(ranks.values())
        avg = sum(ranks.values()) / n
        consensus = self.consensus(n, avg)
        raw_meta = chunk_meta.get(chunk_id) if chunk_meta else None
        meta = self._meta(chunk_meta, chunk_id)
        boost = EXPANSION_BOOST if matched else 1.0
        score = fused * consensus * boost

        features = (
            [float(ranks.get(s, ABSENT_RANK)) for s in FEATURE_STRATEGIES]
            + [rrf.get(s, 0.0) for s in FEATURE_STRATEGIES]
            + [weights[s] for s in FEATURE_STRATEGIES]
            + [float(n), float(best), avg, consensus]
            + [float(meta.size) if meta else 0.0, float(meta.path.count("/")) if meta else 0.0]
        )
        ordered = [s for s in FEATURE_STRATEGIES if s in ranks] + [s for s in ranks if s not in FEATURE_STRATEGIES]
        terms = " + ".join(f"{s} #{ranks[s]} ({rrf[s]:.4f})" for s in ordered)
        explanation = (
            f"{terms} = {fused:.4f} x consensus {consensus:.2f} "
            f"({n} strateg{'y' if n == 1 else 'ies'}, avg rank {avg:.1f})"
        )
        if matched:
            explanation += f" x expansion {boost:.2f} ({matched})"
        explanation += f" = {score:.4f}"
        return Hit(
            chunk_id=chunk_id,
            score=score,
            fused_score=score,
            ranks=dict(ranks),
            rrf_scores=rrf,
            features=features,
            explanation=explanation,
            chunk=raw_meta if isinstance(raw_meta, Chunk) else None,
        )


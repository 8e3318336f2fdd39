"""Weighted RRF + consensus: values hand-computed from the RFC formulas."""

from __future__ import annotations

import math

import pytest

from semantica.config import FusionConfig
from semantica.feature_schema import FEATURE_STRATEGIES
from semantica.hits import ABSENT_RANK, FEATURE_NAMES, ChunkMeta
from semantica.schema import Chunk
from serving.core.fusion import WeightedRRF, consensus_factor
from serving.core.intent import Expansions, Intent, IntentResult

V, L, S, G = "vector", "lexical", "symbol", "graph"


@pytest.fixture()
def rrf() -> WeightedRRF:
    return WeightedRRF(FusionConfig())


def _intent(probs: dict[Intent, float], dominant: Intent, expansions: Expansions | None = None):
    full = {i: probs.get(i, 0.0) for i in Intent}
    return IntentResult(probabilities=full, dominant=dominant, expansions=expansions or Expansions())


def test_consensus_examples_at_quality_one(rrf: WeightedRRF) -> None:
    assert rrf.consensus(1, 0.0) == pytest.approx(1.00)
    assert rrf.consensus(2, 0.0) == pytest.approx(1.1243, abs=1e-4)
    assert rrf.consensus(3, 0.0) == pytest.approx(1.2196, abs=1e-4)
    assert rrf.consensus(4, 0.0) == pytest.approx(1.30)
    assert rrf.consensus(0, 0.0) == 0.0


def test_consensus_quality_term_and_cap() -> None:
    # avg rank = q0 halves the bonus of the quality term: 0.5 + 0.5/2 = 0.75
    assert consensus_factor(1, 10.0, 0.3, 1.5, 10.0) == pytest.approx(0.75)
    assert consensus_factor(2, 2.0, 0.3, 1.5, 10.0) == pytest.approx(
        (1 + 0.3 * (math.sqrt(2) - 1)) * (0.5 + 0.5 / 1.2)
    )
    # the cap binds with a large beta
    assert consensus_factor(4, 0.0, 2.0, 1.5, 10.0) == pytest.approx(1.5)


def test_pure_code_intent_lexical_1_vector_3(rrf: WeightedRRF) -> None:
    intent = IntentResult.pure(Intent.CODE)
    hits = rrf.fuse({V: [("x", 1), ("a", 3)], L: [("a", 1)]}, intent)
    a = next(h for h in hits if h.chunk_id == "a")
    rrf_v, rrf_l = 0.5 / (70 + 3), 0.3 / (70 + 1)
    fused = rrf_v + rrf_l
    consensus = (1 + 0.3 * (math.sqrt(2) - 1)) * (0.5 + 0.5 / (1 + 2 / 10))
    assert a.rrf_scores == {"vector": pytest.approx(rrf_v), "lexical": pytest.approx(rrf_l)}
    assert a.score == pytest.approx(fused * consensus)
    assert a.score == pytest.approx(0.011413, abs=1e-6)
    assert a.fused_score == a.score
    assert a.ranks == {"vector": 3, "lexical": 1}
    # x: vector rank 1 only -> 0.5/71 * 1.0 * (0.5 + 0.5/1.1)
    x = next(h for h in hits if h.chunk_id == "x")
    assert x.score == pytest.approx(0.5 / 71 * (0.5 + 0.5 / 1.1))
    assert [h.chunk_id for h in hits] == ["a", "x"]


def test_features_and_explanation(rrf: WeightedRRF) -> None:
    intent = IntentResult.pure(Intent.CODE)
    meta = {"a": ChunkMeta(symbol="f", path="pkg/sub/mod.py", size=12)}
    (a,) = rrf.fuse({V: [("a", 3)], L: [("a", 1)]}, intent, meta)
    f = dict(zip(FEATURE_NAMES, a.features))
    assert len(a.features) == len(FEATURE_NAMES) == 18
    assert (f["rank_vector"], f["rank_lexical"]) == (3, 1)
    assert f["rank_symbol"] == f["rank_graph"] == ABSENT_RANK
    assert f["rrf_symbol"] == f["rrf_graph"] == 0.0
    assert f["rrf_vector"] == pytest.approx(0.5 / 73)
    assert [f[f"weight_{s}"] for s in ("vector", "lexical", "symbol", "graph")] == pytest.approx(
        [0.5, 0.3, 0.1, 0.1]
    )
    assert (f["n_strategies"], f["best_rank"], f["avg_rank"]) == (2, 1, 2)
    assert f["consensus"] == pytest.approx(rrf.consensus(2, 2.0))
    assert (f["chunk_lines"], f["file_depth"]) == (12, 2)
    assert "vector #3 (0.0068)" in a.explanation and "lexical #1 (0.0042)" in a.explanation
    assert "consensus 1.03" in a.explanation


def test_weights_mix_profiles_and_normalise(rrf: WeightedRRF) -> None:
    # 50/50 code + concept, dominant concept: no boost applies
    w = rrf.weights(_intent({Intent.CODE: 0.5, Intent.CONCEPT: 0.5}, Intent.CONCEPT))
    assert w[V] == pytest.approx(0.6) and w[L] == pytest.approx(0.25)
    assert w[S] == pytest.approx(0.075) and w[G] == pytest.approx(0.075)
    assert sum(w.values()) == pytest.approx(1.0)


def test_flow_boost(rrf: WeightedRRF) -> None:
    w = rrf.weights(IntentResult.pure(Intent.FLOW))
    raw = {V: 0.2, L: 0.1, S: 0.2, G: 0.5 * 1.3}
    total = sum(raw.values())
    assert w == {s: pytest.approx(v / total) for s, v in raw.items()}
    # p(flow) <= 0.2: no boost even when dominant
    probs = {Intent.FLOW: 0.2, Intent.SYMBOL: 0.2, Intent.CODE: 0.2, Intent.CONCEPT: 0.2,
             Intent.BALANCED: 0.2}
    plain = rrf.weights(_intent(probs, Intent.FLOW))
    mixed = {s: sum(0.2 * FusionConfig().profiles[i][s] for i in FusionConfig().profiles)
             for s in FEATURE_STRATEGIES}
    assert plain == {s: pytest.approx(v / sum(mixed.values())) for s, v in mixed.items()}


def test_symbol_boost(rrf: WeightedRRF) -> None:
    w = rrf.weights(IntentResult.pure(Intent.SYMBOL))
    raw = {V: 0.2, L: 0.2, S: 0.5 * 1.2, G: 0.1}
    assert w == {s: pytest.approx(v / sum(raw.values())) for s, v in raw.items()}
    # not dominant -> no boost
    w2 = rrf.weights(_intent({Intent.SYMBOL: 0.45, Intent.CODE: 0.55}, Intent.CODE))
    assert w2[S] == pytest.approx(0.45 * 0.5 + 0.55 * 0.1)


def test_expansion_boost(rrf: WeightedRRF) -> None:
    exp = Expansions(symbols=["raw_decode"], paths=["json/decoder.py"], modules=["json.scanner"])
    intent = _intent({Intent.CODE: 1.0}, Intent.CODE, exp)
    meta = {
        "sym": ChunkMeta(symbol="JSONDecoder.raw_decode", path="lib/other.py", size=5),
        "path": ChunkMeta(symbol="x", path="lib/json/decoder.py", size=5),
        "mod": ChunkMeta(symbol="y", path="json/scanner.py", size=5),
        "none": ChunkMeta(symbol="decode", path="lib/decoder2.py", size=5),
    }
    lists = {V: [("sym", 1), ("path", 1), ("mod", 1), ("none", 1)]}
    hits = {h.chunk_id: h for h in rrf.fuse(lists, intent, meta)}
    base = 0.5 / 71 * (0.5 + 0.5 / 1.1)
    for cid in ("sym", "path", "mod"):
        assert hits[cid].score == pytest.approx(base * 1.1), cid
        assert "expansion 1.10" in hits[cid].explanation
    assert hits["none"].score == pytest.approx(base)


def test_chunk_meta_accepts_chunks(rrf: WeightedRRF) -> None:
    chunk = Chunk.build("r", "a/b.py", "python", 3, 10, "function", "helper", "def helper(): ...")
    intent = _intent({Intent.CODE: 1.0}, Intent.CODE, Expansions(symbols=["helper"]))
    (hit,) = rrf.fuse({L: [(chunk.chunk_id, 1)]}, intent, {chunk.chunk_id: chunk})
    assert hit.chunk is chunk
    features = dict(zip(FEATURE_NAMES, hit.features))
    assert features["chunk_lines"] == 8 and features["file_depth"] == 1
    assert "expansion" in hit.explanation


def test_ties_break_by_best_rank_then_chunk_id(rrf: WeightedRRF) -> None:
    intent = IntentResult.pure(Intent.BALANCED)
    # same strategy, same rank (a malformed but possible input): equal scores -> chunk id order
    hits = rrf.fuse({V: [("b", 1), ("a", 1)]}, intent)
    assert [h.chunk_id for h in hits] == ["a", "b"]
    assert hits[0].score == hits[1].score
    # equal weights and equal k (symbol and graph both 50): symbol #2 and graph #2 tie -> id order
    cfg = FusionConfig()
    cfg.profiles = {i: {"vector": 0.25, "lexical": 0.25, "symbol": 0.25, "graph": 0.25}
                    for i in cfg.profiles}
    flat = WeightedRRF(cfg)
    hits = flat.fuse({V: [("n2", 1)], L: [("n1", 1)], S: [("z", 2)], G: [("y", 2)]}, intent)
    # 0.25/52 (symbol/graph #2) > 0.25/71 (vector/lexical #1); within each tie: chunk id
    assert [h.chunk_id for h in hits] == ["y", "z", "n1", "n2"]


def test_tie_on_score_prefers_better_best_rank() -> None:
    # equal weights: vector #1 (k 70) and symbol #21 (k 50) both give 0.25/71
    cfg = FusionConfig()
    cfg.profiles = {i: {"vector": 0.25, "lexical": 0.25, "symbol": 0.25, "graph": 0.25}
                    for i in cfg.profiles}
    cfg.consensus_q0 = 1e300  # quality term == 1.0 exactly, so only RRF decides
    flat = WeightedRRF(cfg)
    hits = flat.fuse({V: [("b", 1)], S: [("a", 21)]}, IntentResult.pure(Intent.BALANCED))
    assert hits[0].score == hits[1].score  # exact tie; "a" < "b" would win on id
    assert [h.chunk_id for h in hits] == ["b", "a"]


def test_cutoffs_and_k(rrf: WeightedRRF) -> None:
    lists = {V: [(f"c{i:03d}", i) for i in range(1, 101)]}
    assert len(rrf.fuse(lists, IntentResult.pure(Intent.SYMBOL))) == 20
    assert len(rrf.fuse(lists, IntentResult.pure(Intent.FLOW))) == 15
    assert len(rrf.fuse(lists, IntentResult.pure(Intent.CONCEPT))) == 60
    assert len(rrf.fuse(lists, IntentResult.pure(Intent.CODE))) == 40
    assert len(rrf.fuse(lists, None)) == 40  # no intent = balanced
    assert len(rrf.fuse(lists, IntentResult.pure(Intent.FLOW), k=5)) == 15  # k below cutoff
    assert len(rrf.fuse(lists, IntentResult.pure(Intent.FLOW), k=80)) == 80  # larger k wins
    assert len(rrf.fuse(lists, IntentResult.pure(Intent.FLOW), k=500)) == 100


def test_order_follows_rank_within_one_strategy(rrf: WeightedRRF) -> None:
    lists = {L: [(f"c{i}", i) for i in range(1, 11)]}
    hits = rrf.fuse(lists, IntentResult.pure(Intent.CODE))
    assert [h.chunk_id for h in hits] == [f"c{i}" for i in range(1, 11)]
    assert all(a.score > b.score for a, b in zip(hits, hits[1:]))


def test_consensus_lifts_agreement(rrf: WeightedRRF) -> None:
    lists = {V: [("solo", 1), ("both", 2)], L: [("both", 2)], S: [("both", 3)]}
    hits = rrf.fuse(lists, IntentResult.pure(Intent.BALANCED))
    assert hits[0].chunk_id == "both"


def test_empty_inputs(rrf: WeightedRRF) -> None:
    assert rrf.fuse({}, IntentResult.pure(Intent.CODE)) == []
    assert rrf.fuse({V: [], L: []}, None) == []


def test_duplicate_ids_keep_best_rank_and_strings_accepted(rrf: WeightedRRF) -> None:
    (hit,) = rrf.fuse({"vector": [("a", 5), ("a", 2)]}, IntentResult.pure(Intent.CODE))
    assert hit.ranks == {"vector": 2}


def test_bad_inputs_raise_clearly(rrf: WeightedRRF) -> None:
    with pytest.raises(ValueError, match="unknown strategy 'dense'"):
        rrf.fuse({"dense": [("a", 1)]}, None)
    with pytest.raises(ValueError, match="integer >= 1"):
        rrf.fuse({V: [("a", 0)]}, None)
    with pytest.raises(ValueError, match="lacks intent"):
        cfg = FusionConfig()
        del cfg.profiles["flow"]
        WeightedRRF(cfg)


def test_scores_are_fuses_order_and_scores_without_hits(rrf: WeightedRRF) -> None:
    lists = {V: [("a", 1), ("b", 2), ("c", 3), ("d", 4)], L: [("c", 1), ("a", 2), ("e", 3)], S: [("e", 1), ("b", 2)]}
    intent = _intent({Intent.SYMBOL: 0.6, Intent.CODE: 0.4}, Intent.SYMBOL)
    for k in (None, 2, 50):
        assert rrf.scores(lists, intent, k=k) == [(h.chunk_id, h.score) for h in rrf.fuse(lists, intent, None, k=k)]
    halved = {V: 0.5}
    assert rrf.scores(lists, intent, k=50, multipliers=halved) == [
        (h.chunk_id, h.score) for h in rrf.fuse(lists, intent, None, k=50, multipliers=halved)]
    assert rrf.scores({}, intent) == []

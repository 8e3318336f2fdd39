"""The retry pieces alone: the judge's reasons, the rule-based rewrites, the rank merge, the LLM hook."""

from __future__ import annotations

import pytest

from semantica.config import ConfigError, PlanningConfig, PlanningRetryConfig
from semantica.hits import Hit
from semantica.schema import Chunk
from serving.planning.analyzer import QueryAnalyzer
from serving.planning.retry import QueryRewriter, ResultEvaluator, merge_ranked, split_identifier


def _chunk(n: int, symbol: str, content: str) -> Chunk:
    return Chunk(chunk_id=f"c{n}", repo="r", path=f"{n}.py", language="python", start_line=1, end_line=2,
                 kind="function", symbol=symbol, content=content, content_sha=f"s{n}")


def test_judge_names_each_reason():
    features = QueryAnalyzer(PlanningConfig()).analyze("where is parse_args used")
    chunks = {c.chunk_id: c for c in [_chunk(1, "main", "run()"), _chunk(2, "parse_args", "def parse_args(): ...")]}
    judge = ResultEvaluator(PlanningRetryConfig())
    weak = judge.judge([Hit("c1", 0.001, 0.001, ranks={"vector": 1})], chunks, features)
    assert weak.weak and len(weak.reasons) == 3
    assert any("low top score" in r for r in weak.reasons) and any("no consensus" in r for r in weak.reasons)
    assert any("'parse_args'" in r for r in weak.reasons)
    good = judge.judge([Hit("c2", 0.02, 0.02, ranks={"vector": 1, "lexical": 2})], chunks, features)
    assert not good.weak and good.reasons == []
    assert judge.judge([], chunks, features).reasons == ["no hits"]


def test_rewrites_split_identifiers_and_drop_stop_words():
    config = PlanningConfig()
    query = "why does JSONDecoder.raw_decode fail on the empty input"
    features = QueryAnalyzer(config).analyze(query)
    assert split_identifier("JSONDecoder.raw_decode") == ["json", "decoder", "raw", "decode"]
    rewrites = QueryRewriter(config.retry, config.analyzer.stop_words).rewrites(query, features)
    assert rewrites[0] == "why does json decoder raw decode fail on the empty input"
    assert rewrites[1] == "JSONDecoder raw_decode fail empty input"
    assert "JSONDecoder.raw_decode" in rewrites and len(rewrites) <= config.retry.max_rewrites


def test_merge_ranked_rewards_agreement_across_passes():
    merged = merge_ranked([{"lexical": [("a", 1), ("b", 2)]}, {"lexical": [("b", 1), ("c", 2)]},
                           {"vector": [("c", 1)]}], 60.0)
    assert merged["lexical"] == [("b", 1), ("a", 2), ("c", 3)] and merged["vector"] == [("c", 1)]


def test_llm_hook_is_off_and_refuses_a_missing_url():
    with pytest.raises(ConfigError, match="llm_url"):
        QueryRewriter(PlanningRetryConfig(llm_rewrites=True), [])

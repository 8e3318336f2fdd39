"""The LTR stage: reordering real fused hits with a trained model, in the pipeline and when it is broken."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from semantica.config import LtrConfig
from serving.ltr import LtrModel, LtrModelError, LtrReranker
from serving.pipeline import SearchPipeline, SearchRequest
from tests.conftest import make_config

QUERY = "weighted reciprocal rank fusion with consensus"


@pytest.fixture(scope="module")
def ltr_pipeline(indexed_self, ltr_model_dir):
    config = dataclasses.replace(indexed_self.config,
                                 ltr=LtrConfig(enabled=True, model_path=str(ltr_model_dir), top_n=20))
    return SearchPipeline(config)


def test_reranker_orders_the_head_by_model_score_and_keeps_scores_ordered(indexed_self, ltr_model_dir):
    pipeline = SearchPipeline(indexed_self.config)
    response = pipeline.search(SearchRequest(QUERY, repos=[indexed_self.name], k=40, explain=True,
                                             late_interaction=False))
    from semantica.hits import Hit

    hits = [Hit(h.chunk_id, h.score, h.fused_score, dict(h.ranks), features=list(h.features)) for h in response.hits]
    model = LtrModel.load(ltr_model_dir)
    config = LtrConfig(enabled=True, model_path=str(ltr_model_dir), top_n=25)
    reranked = LtrReranker(config, model).rerank(hits)
    assert sorted(h.chunk_id for h in reranked) == sorted(h.chunk_id for h in hits)
    head, tail = reranked[:25], reranked[25:]
    raw = model.predict(np.asarray([h.features for h in hits[:25]]))
    assert [h.ltr_score for h in head] == sorted(raw.tolist(), reverse=True)
    assert [h.chunk_id for h in tail] == [h.chunk_id for h in hits[25:]]  # the tail keeps its fused order
    scores = [h.score for h in reranked]
    assert scores == sorted(scores, reverse=True)
    assert head[0].score == pytest.approx(1.0) and min(h.score for h in head) == pytest.approx(config.score_floor)
    assert all(0 <= h.score <= config.score_floor for h in tail)


def test_pipeline_with_ltr_reports_the_stage_and_scores(indexed_self, ltr_pipeline):
    response = ltr_pipeline.search(SearchRequest(QUERY, repos=[indexed_self.name], k=10, explain=True))
    assert not response.degraded
    assert "ltr" in response.timings_ms
    assert all(h.ltr_score is not None for h in response.hits)
    assert "LTR" in response.hits[0].explanation
    off = ltr_pipeline.search(SearchRequest(QUERY, repos=[indexed_self.name], k=10, ltr=False))
    assert "ltr" not in off.timings_ms and all(h.ltr_score is None for h in off.hits)


def test_missing_model_degrades_to_the_fused_order(indexed_self, tmp_path):
    config = dataclasses.replace(indexed_self.config, ltr=LtrConfig(enabled=True, model_path=str(tmp_path / "none")))
    broken = SearchPipeline(config)
    plain = SearchPipeline(indexed_self.config)
    request = dict(query=QUERY, repos=[indexed_self.name], k=10, late_interaction=False)
    response = broken.search(SearchRequest(**request))
    assert [d["stage"] for d in response.degraded] == ["ltr"]
    assert "train-ltr" in response.degraded[0]["error"]
    assert [h.chunk_id for h in response.hits] == [h.chunk_id for h in plain.search(SearchRequest(**request)).hits]


def test_enabled_without_a_model_path_is_a_clear_error(tmp_path):
    config = make_config(tmp_path, "ltr.enabled=true")
    with pytest.raises(LtrModelError, match="model_path"):
        LtrReranker.from_config(config.ltr)

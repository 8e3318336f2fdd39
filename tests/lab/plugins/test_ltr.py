"""The `ltr` lab plug-in (left off by the product): reordering real fused hits with a trained model, in the
pipeline when named in `rerank.order`, and when its model is missing."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from lab.plugins.ltr import (
    LTR_FEATURE_NAMES,
    LTR_STAGE,
    LtrFeaturizer,
    LtrModel,
    LtrModelError,
    LtrReranker,
    LtrSettings,
    LtrStage,
)
from semantica.api import SearchRequest
from semantica.hits import FEATURE_NAMES
from serving.pipeline import SearchPipeline

QUERY = "weighted reciprocal rank fusion with consensus"


def _with_ltr(config, monkeypatch, settings: LtrSettings):  # noqa: ANN001, ANN202
    """The pipeline with the plug-in first in `rerank.order`, as a study runs it."""
    monkeypatch.setattr(LtrStage, "settings", settings)
    return SearchPipeline(dataclasses.replace(config, rerank=dataclasses.replace(
        config.rerank, order=[LTR_STAGE, *config.rerank.order])))


def test_reranker_orders_the_head_by_model_score_and_keeps_scores_ordered(indexed_self, ltr_model_dir):
    pipeline = SearchPipeline(indexed_self.config)
    response = pipeline.search(SearchRequest(QUERY, repos=[indexed_self.name], k=40, explain=True,
                                             late_interaction=False))
    from semantica.hits import Hit

    hits = [Hit(h.chunk_id, h.score, h.fused_score, dict(h.ranks), features=list(h.features)) for h in response.hits]
    chunks = pipeline.snapshots.get(indexed_self.name).chunk_by_id
    intent = pipeline.intent.classify(QUERY)
    model = LtrModel.load(ltr_model_dir)
    config = LtrSettings(model_path=str(ltr_model_dir), top_n=25)
    reranked = LtrReranker(config, model).rerank(hits, chunks, QUERY, intent)
    assert sorted(h.chunk_id for h in reranked) == sorted(h.chunk_id for h in hits)
    head, tail = reranked[:25], reranked[25:]
    featurizer = LtrFeaturizer(QUERY, intent)
    raw = model.predict(np.asarray([featurizer.row(h.features, chunks[h.chunk_id].path, chunks[h.chunk_id].symbol,
                                                   chunks[h.chunk_id].kind) for h in hits[:25]]))
    assert [h.scores["ltr"] for h in head] == sorted(raw.tolist(), reverse=True)
    assert [h.chunk_id for h in tail] == [h.chunk_id for h in hits[25:]]  # the tail keeps its fused order
    scores = [h.score for h in reranked]
    assert scores == sorted(scores, reverse=True)
    assert head[0].score == pytest.approx(1.0) and min(h.score for h in head) == pytest.approx(config.score_floor)
    assert all(0 <= h.score <= config.score_floor for h in tail)


def test_pipeline_with_ltr_reports_the_stage_and_scores(indexed_self, ltr_model_dir, monkeypatch):
    pipeline = _with_ltr(indexed_self.config, monkeypatch, LtrSettings(model_path=str(ltr_model_dir), top_n=20))
    response = pipeline.search(SearchRequest(QUERY, repos=[indexed_self.name], k=10, explain=True))
    assert not response.degraded
    assert "ltr" in response.timings_ms
    assert all("ltr" in h.scores for h in response.hits)
    assert "LTR" in response.hits[0].explanation
    off = SearchPipeline(indexed_self.config).search(SearchRequest(QUERY, repos=[indexed_self.name], k=10))
    assert "ltr" not in off.timings_ms and all("ltr" not in h.scores for h in off.hits)  # the product ships without it


def test_missing_model_degrades_to_the_fused_order(indexed_self, tmp_path, monkeypatch):
    broken = _with_ltr(indexed_self.config, monkeypatch, LtrSettings(model_path=str(tmp_path / "none")))
    plain = SearchPipeline(indexed_self.config)
    request = dict(query=QUERY, repos=[indexed_self.name], k=10, late_interaction=False)
    response = broken.search(SearchRequest(**request))
    assert [d["stage"] for d in response.degraded] == ["ltr"]
    assert "lab.train.ltr" in response.degraded[0]["error"]
    assert [h.chunk_id for h in response.hits] == [h.chunk_id for h in plain.search(SearchRequest(**request)).hits]


def test_context_features_describe_the_hit_and_the_query(indexed_self):
    pipeline = SearchPipeline(indexed_self.config)
    query = "who calls load_config in semantica/config.py"
    featurizer = LtrFeaturizer(query, pipeline.intent.classify(query))
    names = dict(zip(LTR_FEATURE_NAMES, featurizer.row([0.0] * len(FEATURE_NAMES), "semantica/config.py", "load_config",
                                                       "function")))
    assert names["names_symbol"] == 1.0 and names["names_path"] == 0.0  # the symbol match is reported first
    assert names["kind_function"] == 1.0 and names["kind_class"] == 0.0 and names["is_test"] == 0.0
    other = dict(zip(LTR_FEATURE_NAMES, featurizer.row([0.0] * len(FEATURE_NAMES), "tests/test_x.py", "helper", "class")))
    assert other["is_test"] == 1.0 and other["names_symbol"] == other["names_path"] == 0.0
    in_path = dict(zip(LTR_FEATURE_NAMES, featurizer.row([0.0] * len(FEATURE_NAMES), "semantica/config.py", "_build",
                                                         "function")))
    assert in_path["names_symbol"] == 0.0 and in_path["names_path"] == 1.0
    assert sum(names[f"intent_{i}"] for i in ("symbol", "flow", "concept", "code", "balanced")) == pytest.approx(1.0)
    assert names["query_words"] == pytest.approx(np.log1p(5))


def test_no_model_path_is_a_clear_error():
    with pytest.raises(LtrModelError, match="model_path"):
        LtrReranker.from_settings(LtrSettings())

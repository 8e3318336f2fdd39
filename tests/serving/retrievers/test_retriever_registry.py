"""The retriever registry: a new index kind is one registered class plus its conf (`retrieval.retrievers`,
`fusion.rrf_k`, `fusion.extra_weights`); the pipeline fuses it and explains it by name."""

from __future__ import annotations

import pytest

from semantica.api import QueryError, SearchRequest
from semantica.config import ConfigError
from serving.pipeline import SearchPipeline
from serving.retrievers.base import BaseRetriever, RetrievalQuery, ScoredList
from serving.retrievers.registry import enabled_specs, register_retriever, unregister_retriever
from tests.conftest import make_config
from tests.serving.ray.test_app import REPO_NAME, make_tiny_index

pytestmark = pytest.mark.timeout(300)
TOY = "pathname"


class PathNameRetriever(BaseRetriever):
    """A toy index kind: chunks whose file path holds a query word (a real, if crude, signal)."""

    def __init__(self, snapshot) -> None:
        super().__init__(snapshot.chunk_by_id)

    def _search(self, query: RetrievalQuery, k: int) -> ScoredList:
        words = {w.lower() for w in query.text.split() if len(w) > 3}
        found = [(cid, 1.0) for cid, chunk in sorted(self.chunk_by_id.items())
                 if any(w in chunk.path.lower() for w in words)]
        return found[:k]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("retriever-registry")
    make_tiny_index(root)
    register_retriever(TOY, lambda repo: PathNameRetriever(repo.snapshot))
    yield root
    unregister_retriever(TOY)


def _pipeline(root, *overrides: str) -> SearchPipeline:
    return SearchPipeline(make_config(root, f"serve.feedback_dir={root / 'feedback'}", *overrides))


def test_a_registered_retriever_is_fused_and_explained_by_name(tiny):
    pipeline = _pipeline(tiny, f"retrieval.retrievers=[vector,lexical,symbol,graph,{TOY}]",
                         f"fusion.rrf_k.{TOY}=60", f"fusion.extra_weights.{TOY}=0.5")
    response, lists = pipeline.search_with_lists(SearchRequest(query="what are the prices", repos=[REPO_NAME],
                                                               k=10, explain=True))
    toy_ids = [cid for cid, _ in lists[TOY]]
    chunks = pipeline.snapshots.get(REPO_NAME).chunk_by_id
    assert toy_ids and {chunks[c].path for c in toy_ids} == {"shop/prices.py"}
    by_id = {h.chunk_id: h for h in response.hits}
    listed = [by_id[c] for c in toy_ids if c in by_id]
    assert listed and all(TOY in h.ranks and f"{TOY} #" in h.explanation for h in listed)
    assert all(len(h.features) == 18 for h in response.hits)  # the fusion feature schema (v1) is unchanged


def test_a_request_narrows_to_the_registered_retriever(tiny):
    pipeline = _pipeline(tiny, f"retrieval.retrievers=[lexical,{TOY}]", f"fusion.rrf_k.{TOY}=60",
                         f"fusion.extra_weights.{TOY}=1.0")
    response = pipeline.search(SearchRequest(query="prices", repos=[REPO_NAME], k=5, strategies=[TOY]))
    assert response.hits and {h.path for h in response.hits} == {"shop/prices.py"}
    assert all(set(h.ranks) == {TOY} for h in response.hits)
    with pytest.raises(QueryError, match="not enabled"):
        pipeline.search(SearchRequest(query="prices", repos=[REPO_NAME], k=5, strategies=["vector"]))
    with pytest.raises(QueryError, match="unknown strategy 'nope'"):
        pipeline.search(SearchRequest(query="prices", repos=[REPO_NAME], k=5, strategies=["nope"]))


def test_a_retriever_without_fusion_weights_is_a_clear_error(tiny):
    pipeline = _pipeline(tiny, f"retrieval.retrievers=[lexical,{TOY}]")
    with pytest.raises(ValueError, match=f"fusion.extra_weights.{TOY}"):
        pipeline.search(SearchRequest(query="prices", repos=[REPO_NAME], k=5))


def test_unknown_names_and_seed_order_are_checked_at_build_time():
    with pytest.raises(ConfigError, match="unknown strategy 'bogus'"):
        enabled_specs(["vector", "bogus"])
    assert [s.name for s in enabled_specs(["graph", "symbol", "lexical"])] == ["symbol", "lexical", "graph"]

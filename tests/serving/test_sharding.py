"""Sharded snapshots rank exactly like unsharded ones: FAISS fan-out + merge and Lucene over all shards."""

from __future__ import annotations

import pytest

from pipelines.indexer import Indexer
from semantica.api import SearchRequest
from semantica.snapshot import SnapshotSet
from semantica.stores.lucene import LuceneShardSearcher
from semantica.stores.lucene_multi import LuceneMultiShardSearcher
from serving.pipeline import SearchPipeline
from serving.retrievers.base import RetrievalQuery
from tests.conftest import make_config
from tests.dated_git import one_commit_repo
from tests.serving.rerankers.test_late_stored import FILES

MORE = {
    f"pkg/mod{i}.py": f'def handler_{i}(request, retries={i}):\n    """Handle request {i}: retry, resize or store."""\n'
                      f"    return request.retry(retries) if {i} % 2 else request.store('table_{i}')\n"
    for i in range(12)
}
QUERIES = ["retry a network request with exponential backoff", "handler request store table", "resize_image",
           "create SQL tables for users", "retries"]
TINY = ["faiss.shard_max_vectors=3", "lucene.shard_max_docs=3"]


@pytest.fixture(scope="module")
def two_layouts(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shards")
    repo = one_commit_repo(tmp / "repo", {**FILES, **MORE})
    one = make_config(tmp / "one")
    many = make_config(tmp / "many", *TINY)
    for config in (one, many):
        Indexer(config, progress=False).index(str(repo), "t/sharded")
    return SearchPipeline(one), SearchPipeline(many)


def test_tiny_shard_sizes_give_many_shards(two_layouts) -> None:
    one, many = two_layouts
    single, sharded = one.snapshots.get("t/sharded"), many.snapshots.get("t/sharded")
    assert len(single.shard_paths("faiss")) == 1 and len(single.shard_paths("lucene")) == 1
    assert len(sharded.shard_paths("faiss")) >= 5 and len(sharded.shard_paths("lucene")) >= 5
    assert isinstance(single.lucene_shards[0], LuceneShardSearcher)
    assert len(sharded.lucene_shards) == 1 and isinstance(sharded.lucene_shards[0], LuceneMultiShardSearcher)


@pytest.mark.parametrize("query", QUERIES)
def test_faiss_and_lucene_fan_out_match_one_shard(two_layouts, query: str) -> None:
    one, many = two_layouts
    k = 8
    for strategy in ("vector", "lexical"):
        got = many.retrievers(many.snapshots.get("t/sharded")).get(strategy).search_scored(RetrievalQuery(query), k)
        want = one.retrievers(one.snapshots.get("t/sharded")).get(strategy).search_scored(RetrievalQuery(query), k)
        assert [c for c, _ in got] == [c for c, _ in want], (strategy, got, want)
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-4), strategy


def test_sharded_search_answers_like_one_shard(two_layouts) -> None:
    one, many = two_layouts
    for query in QUERIES:
        a = one.search(SearchRequest(query, repos=["t/sharded"], k=5))
        b = many.search(SearchRequest(query, repos=["t/sharded"], k=5))
        assert [h.chunk_id for h in a.hits] == [h.chunk_id for h in b.hits]


def test_multi_repository_query_fans_out_and_merges(two_layouts, tmp_path) -> None:
    _, many = two_layouts
    other = one_commit_repo(tmp_path / "other", {"ops/backoff.py": "def exponential_backoff(attempt):\n"
                                                                  "    return min(60, 2 ** attempt)  # retry delay\n"})
    Indexer(many.config, progress=False).index(str(other), "t/other")
    response = many.search(SearchRequest("exponential backoff retry", k=10))
    assert set(response.snapshots) == {"t/sharded", "t/other"} and not response.degraded
    assert {h.repo for h in response.hits} == {"t/sharded", "t/other"}
    assert SnapshotSet(many.config).repos() == ["t/other", "t/sharded"]

"""Cold start: `SearchPipeline.prefetch` loads everything a first query needs, in parallel, once."""

from __future__ import annotations

from pipelines.indexer import Indexer
from semantica.api import SearchRequest
from serving.pipeline import SearchPipeline
from tests.conftest import make_config
from tests.dated_git import one_commit_repo
from tests.serving.rerankers.test_late_stored import FILES, QUERY


def test_prefetch_loads_every_index_before_the_first_query(tmp_path) -> None:
    config = make_config(tmp_path)
    Indexer(config, progress=False).index(str(one_commit_repo(tmp_path / "repo", FILES)), "t/toolbox")
    pipeline = SearchPipeline(config)
    prefetcher = pipeline.prefetch(["t/toolbox", "t/not-indexed"])
    assert prefetcher.wait(timeout=600) == {}
    assert set(prefetcher.futures) == {"encoder", "t/toolbox:tables", "t/toolbox:localizer",
                                       *(f"t/toolbox:{name}" for name in ("vector", "lexical", "symbol", "graph", "exact"))}
    snapshot = pipeline.snapshots.get("t/toolbox")
    retrievers = pipeline.retrievers(snapshot)
    for loaded in ("chunks", "symbols", "chunk_row"):
        assert loaded in snapshot.__dict__, loaded
    assert {"tokens", "lucene", "faiss"} <= snapshot.opened()
    assert retrievers.built() == {"lexical", "vector", "symbol", "graph", "exact"}
    shards = snapshot.lucene_shards
    assert pipeline.prefetch(["t/toolbox"]) is prefetcher  # started loads are not started again
    response = pipeline.search(SearchRequest(QUERY, repos=["t/toolbox"], k=3))
    assert response.hits[0].path == "net/retry.py" and not response.degraded
    assert snapshot.lucene_shards is shards  # the search used the prefetched readers

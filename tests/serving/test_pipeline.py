"""The in-process query pipeline over a real index of this repository."""

from __future__ import annotations

import pytest

from semantica.api import QueryError, SearchRequest
from semantica.ondisk.layout_errors import UnknownRepoError
from serving.pipeline import SearchPipeline


@pytest.fixture(scope="module")
def pipeline(indexed_self) -> SearchPipeline:
    return SearchPipeline(indexed_self.config)


def symbols_of(response) -> list[str]:
    return [f"{h.path}::{h.symbol}" for h in response.hits]


def test_who_calls_returns_the_callers(pipeline):
    response = pipeline.search(SearchRequest("who calls _coerce", k=10))
    assert response.intent["dominant"] == "flow"
    assert "semantica/config/loader.py::_build" in symbols_of(response)


def test_camel_case_identifier_returns_its_definition_first(pipeline):
    for name, path in [("WeightedRRF", "serving/core/fusion.py"), ("SnapshotWriter", "pipelines/write.py"),
                       ("CsrGraphStore", "semantica/stores/graph.py")]:
        response = pipeline.search(SearchRequest(name, k=5))
        assert symbols_of(response)[0] == f"{path}::{name}", (name, symbols_of(response))


def test_natural_language_description_finds_the_function(pipeline):
    cases = {
        "rebuild the lines of a file from the chunks that cover it": "semantica/snapshot.py::Snapshot.file_lines",
        "compute pagerank of the code graph by power iteration": "semantica/stores/graph.py::CsrGraphStore.pagerank",
        "git blob sha of file bytes": "pipelines/source_files.py::git_blob_sha",
    }
    for query, expected in cases.items():
        response = pipeline.search(SearchRequest(query, k=5))
        assert expected in symbols_of(response), (query, symbols_of(response))


def test_response_carries_features_explanations_timings_and_context(pipeline):
    response = pipeline.search(SearchRequest("WeightedRRF fuse", k=3, explain=True))
    hit = response.hits[0]
    assert len(hit.features) == 18 and "consensus" in hit.explanation
    assert {"intent", "vector", "lexical", "symbol", "graph", "fusion", "context"} <= set(response.timings_ms)
    block = response.context["blocks"][0]
    assert block["citation"].startswith(hit.path + ":")
    assert len(block["text"].splitlines()) <= 24
    assert response.files[0]["path"] == hit.path


def test_repeated_query_is_served_from_the_cache(pipeline):
    first = pipeline.search(SearchRequest("IndexLayout publish", k=4))
    second = pipeline.search(SearchRequest("IndexLayout publish", k=4))
    assert not first.cached and second.cached
    assert [h.chunk_id for h in first.hits] == [h.chunk_id for h in second.hits]


@pytest.mark.parametrize("query", ["", "   \n\t"])
def test_empty_queries_are_refused(pipeline, query):
    with pytest.raises(QueryError, match="empty"):
        pipeline.search(SearchRequest(query))


@pytest.mark.parametrize("k", [0, -3])
def test_non_positive_k_is_refused(pipeline, k):
    with pytest.raises(QueryError, match="k must be"):
        pipeline.search(SearchRequest("fusion", k=k))


def test_unknown_repository_is_a_clear_error(pipeline):
    with pytest.raises(UnknownRepoError, match="no published snapshot"):
        pipeline.search(SearchRequest("fusion", repos=["nobody/nothing"]))


def test_hostile_queries_get_safe_answers(pipeline):
    huge = pipeline.search(SearchRequest("load_config " * 9000, k=3))
    assert huge.warnings and "truncated" in huge.warnings[0] and huge.hits
    many = pipeline.search(SearchRequest(" ".join(f"term{i}" for i in range(2000)) + " WeightedRRF", k=3))
    assert not many.degraded
    odd = pipeline.search(SearchRequest("🚀 fuse \ud800 ranked lists 🤖", k=3))
    assert not odd.degraded and odd.hits and any("surrogate" in w for w in odd.warnings)


def test_a_failing_retriever_degrades_the_answer(indexed_self):
    pipeline = SearchPipeline(indexed_self.config)
    snapshot = pipeline.snapshots.get(indexed_self.name)
    retrievers = pipeline.retrievers(snapshot)

    class BrokenIndex:
        def search_scored(self, *args, **kwargs):
            raise RuntimeError("lucene shard unreadable")

    retrievers.replace("lexical", BrokenIndex())
    response = pipeline.search(SearchRequest("WeightedRRF", k=3))
    assert response.degraded == [{"stage": "lexical", "error": "RuntimeError: lucene shard unreadable"}]
    assert response.hits[0].symbol == "WeightedRRF"
    assert not pipeline.search(SearchRequest("WeightedRRF", k=3)).cached  # degraded answers are not cached


def test_strategy_subset_only_uses_those_retrievers(pipeline):
    response = pipeline.search(SearchRequest("consensus factor", k=5, strategies=["lexical"], late_interaction=False))
    assert all(set(h.ranks) == {"lexical"} for h in response.hits)
    assert "vector" not in response.timings_ms


def test_context_leads_with_the_localizers_top_functions(indexed_self):
    from dataclasses import replace

    config = indexed_self.config
    assert config.localizer.enabled and config.context.localizer_first  # the defaults under test
    request = SearchRequest("who calls _coerce", k=3)
    on = SearchPipeline(config).search(request)
    top = [f["function"].split("::")[0] for f in on.functions[:config.context.localizer_functions]]
    paths = [b["citation"].rsplit(":", 1)[0] for b in on.context["blocks"]]
    assert paths[: len(top)] == top  # each top function's first chunk, in the localizer's order, then the hits
    off = SearchPipeline(replace(config, context=replace(config.context, localizer_first=False))).search(request)
    off_paths = [b["citation"].rsplit(":", 1)[0] for b in off.context["blocks"]]
    assert off_paths[0] == off.hits[0].path and not set(top) <= set(off_paths)  # three hits alone miss some

"""The `repo_scope` lab plug-in (scope selection, left off by the product): registered on import, named in
`rerank.order`, it boosts or narrows a broad query's hits to the repository map's top files of a real index."""

from __future__ import annotations

import dataclasses

from lab.plugins import repo_scope
from semantica.api import SearchRequest
from serving.pipeline import SearchPipeline
from tests.serving.planning.conftest import planning_repo  # noqa: F401  (the fixture: a real index)

FORCED = dict(min_files=1, min_query_words=3, top_files=1)  # the test repository is small and the query short


def _search(config, monkeypatch, name, k):  # noqa: ANN001
    monkeypatch.setattr(repo_scope.RepoScope, "settings", repo_scope.ScopeSettings(**FORCED))
    config = dataclasses.replace(config, rerank=dataclasses.replace(config.rerank, order=[*config.rerank.order, name]))
    request = SearchRequest(query="charge the cart and record the payment of Ledger", repos=["acme/shop"], k=k,
                            explain=True, late_interaction=False)
    return SearchPipeline(config).search(request).hits


def test_boost_marks_and_lifts_the_hits_in_the_map_s_top_file(planning_repo, monkeypatch):  # noqa: F811
    hits = _search(planning_repo.config, monkeypatch, repo_scope.NAME, 10)
    marked = [h for h in hits if "repo map: file rank 1" in (h.explanation or "")]
    assert marked and {h.path for h in marked} == {"app/models.py"}
    plain = SearchPipeline(planning_repo.config).search(SearchRequest(
        query="charge the cart and record the payment of Ledger", repos=["acme/shop"], k=10, explain=True,
        late_interaction=False)).hits
    assert not any("repo map" in (h.explanation or "") for h in plain)  # the product ships without it


def test_narrow_keeps_the_top_file_s_hits(planning_repo, monkeypatch):  # noqa: F811
    hits = _search(planning_repo.config, monkeypatch, repo_scope.NARROW_NAME, 1)
    assert [h.path for h in hits] == ["app/models.py"]

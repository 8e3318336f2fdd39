"""Request validation: every bad field is a clear QueryError / RepoNameError before any index is read."""

from __future__ import annotations

import pytest

from semantica.api import QueryError, SearchRequest
from semantica.config import ConfigError, load_config
from semantica.ondisk.repo_names import RepoNameError
from serving.pipeline import SearchPipeline
from tests.conftest import make_config


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory) -> SearchPipeline:
    return SearchPipeline(make_config(tmp_path_factory.mktemp("validate")))


def test_unknown_strategy_lists_the_valid_ones(pipeline):
    with pytest.raises(QueryError, match="bogus.*vector, lexical, symbol, graph"):
        pipeline.validate(SearchRequest("x", strategies=["bogus"]))
    request = SearchRequest("x", strategies=["Vector", "lexical"])
    pipeline.validate(request)
    assert request.strategies == ["vector", "lexical"]


@pytest.mark.parametrize("bad", ["", "..", "a\x00b", "a\nb", "../etc"])
def test_bad_repo_names_are_name_errors(pipeline, bad):
    with pytest.raises(RepoNameError):
        pipeline.validate(SearchRequest("x", repos=["ok/name", bad]))


def test_repo_names_are_normalised(pipeline):
    request = SearchRequest("x", repos=[" a//b ", "a/b", "c"])
    pipeline.validate(request)
    assert request.repos == ["a/b", "c"]


def test_repos_must_be_a_list(pipeline):
    with pytest.raises(QueryError, match="list"):
        pipeline.validate(SearchRequest("x", repos="alpha"))  # type: ignore[arg-type]


def test_unknown_language_lists_the_known_ones(pipeline):
    with pytest.raises(QueryError, match="klingon.*python"):
        pipeline.validate(SearchRequest("x", languages=["klingon"]))
    request = SearchRequest("x", languages=["Python"])
    pipeline.validate(request)
    assert request.languages == ["python"]


@pytest.mark.parametrize("k", [True, False, 0, -1, 2.5, "3"])
def test_k_must_be_a_real_positive_int(pipeline, k):
    with pytest.raises(QueryError, match="k must be a positive integer"):
        pipeline.validate(SearchRequest("x", k=k))  # type: ignore[arg-type]


def test_k_left_out_means_the_configured_default(pipeline):
    request = SearchRequest("x")
    pipeline.validate(request)
    assert request.k == pipeline.config.query.default_k


def test_http_body_does_not_turn_true_into_one():
    from pydantic import ValidationError

    from serving.ray.app import SearchBody

    with pytest.raises(ValidationError):
        SearchBody.model_validate({"query": "x", "k": True})
    assert SearchBody.model_validate({"query": "x", "k": 3}).k == 3


def test_cross_encoder_asked_for_without_one_configured_is_a_query_error(pipeline):
    """Before, any client asking for it got a 503 StageUnavailable, as if the server were broken."""
    with pytest.raises(QueryError, match="no cross-encoder configured"):
        pipeline.validate(SearchRequest("why does the cart total change", cross_encoder=True))
    pipeline.validate(SearchRequest("why does the cart total change", cross_encoder=False))
    pipeline.validate(SearchRequest("why does the cart total change"))


def test_the_product_has_no_ltr_reranker_setting_or_request_field():
    """Learning to rank was measured and left off (lab/README.md): it lives on as a lab plug-in
    (lab/plugins/ltr.py), so the product registers no `ltr` reranker, conf has no `ltr` section, and a request
    cannot ask for it."""
    from serving.rerankers.registry import RERANKERS, registered_rerankers

    registered_rerankers()  # the built-ins, loaded (a lab test in the same run may have registered the plug-in)
    assert all(not factory.__module__.startswith(("serving.", "semantica.")) for name, factory in RERANKERS.items()
               if name == "ltr")
    assert "ltr" not in load_config(None, [], environ={}).rerank.order
    with pytest.raises(ConfigError, match="unknown key"):
        load_config(None, ["ltr.enabled=true"], environ={})
    with pytest.raises(TypeError):
        SearchRequest("why does the cart total change", ltr=True)  # type: ignore[call-arg]

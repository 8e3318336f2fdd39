"""Function candidates of equal score (a top file's functions that no list reached) in the order
`localizer.function_ties` names: by key, or by their body's BM25 against the query; the candidate cut follows it."""

from __future__ import annotations

import numpy as np
import pytest

from semantica.config import load_config
from semantica.config.loader import ConfigError
from semantica.localizer.features import CandidateConfig, CandidateGenerator
from semantica.localizer.snapshot import SnapshotBuilder

FILES = {
    "app/router.py": (
        "def dispatch(request):\n    return handlers[request.path](request, request.form, request.handlers)\n\n\n"
        "def a_reset():\n    return None\n\n\n"
        "def b_route(request):\n    return request.path\n\n\n"
        "def c_forms(request):\n    return request.form.fields\n"),
    "app/other.py": "def unrelated():\n    return 1\n",
}
QUERY = "dispatch sends the request to its handlers but the request form is lost"
ONE_LIST_HIT = {"function_list_depth": 1, "top_files": 1, "function_name_boost": 0.0}


@pytest.fixture(scope="module")
def snapshot():
    return SnapshotBuilder().build(FILES)


def build(snapshot, **settings):
    return CandidateGenerator(CandidateConfig(**ONE_LIST_HIT, **settings)).build(snapshot, QUERY, features=False)


def test_ties_by_name_follow_the_key(snapshot):
    cands = build(snapshot)
    assert cands.functions == ["app/router.py::dispatch", "app/router.py::a_reset", "app/router.py::b_route",
                               "app/router.py::c_forms"]
    assert len(set(cands.function_fusion[1:].tolist())) == 1  # the three ties share their file's term


def test_ties_by_body_follow_the_query_terms_they_hold(snapshot):
    cands = build(snapshot, function_ties="body")
    assert cands.functions == ["app/router.py::dispatch", "app/router.py::c_forms", "app/router.py::b_route",
                               "app/router.py::a_reset"]
    assert np.array_equal(np.sort(cands.function_fusion), np.sort(build(snapshot).function_fusion))  # same scores
    body = dict(zip(cands.functions, cands.function_body.tolist()))
    assert body["app/router.py::c_forms"] > body["app/router.py::b_route"] > body["app/router.py::a_reset"] == 0.0


def test_the_candidate_cut_keeps_what_the_tie_order_puts_first(snapshot):
    assert build(snapshot, max_function_candidates=2).functions[1] == "app/router.py::a_reset"
    assert build(snapshot, max_function_candidates=2, function_ties="body").functions[1] == "app/router.py::c_forms"


def test_an_unknown_tie_order_is_a_one_line_config_error():
    with pytest.raises(ConfigError, match="function_ties: expected one of name, body, got 'bm25'"):
        load_config(None, ["localizer.function_ties=bm25"])
    with pytest.raises(ValueError, match="got 'bm25'"):
        CandidateGenerator(CandidateConfig(function_ties="bm25"))

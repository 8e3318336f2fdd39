"""Function candidates of equal score (a top file's functions that no list reached) follow their key."""

from __future__ import annotations

import pytest

from semantica.stores.localizer.features import CandidateConfig, CandidateGenerator
from semantica.stores.localizer.table import LocalizerTableBuilder

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
    return LocalizerTableBuilder().build(FILES)


def build(snapshot, **settings):
    return CandidateGenerator(CandidateConfig(**ONE_LIST_HIT, **settings)).build(snapshot, QUERY, features=False)


def test_ties_by_name_follow_the_key(snapshot):
    cands = build(snapshot)
    assert cands.functions == ["app/router.py::dispatch", "app/router.py::a_reset", "app/router.py::b_route",
                               "app/router.py::c_forms"]
    assert len(set(cands.function_fusion[1:].tolist())) == 1  # the three ties share their file's term

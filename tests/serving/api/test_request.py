"""One request builder for every front (`serving.api.request`): fields, branch resolution and scope, over a
real published snapshot; and no front borrows another front's code to build its request."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from semantica.api import QueryError, SearchRequest
from semantica.ondisk.branch_keys import BranchNotIndexed
from semantica.snapshot import SnapshotSet
from serving.api.request import RequestBuilder
from serving.graph.service import GraphRequest
from serving.retrievers.exact import GrepRequest
from tests.serving.ray.test_app import REPO_NAME, make_tiny_index

ROOT = Path(__file__).resolve().parents[3]
FRONTS = ("jobs", "serving")


@pytest.fixture(scope="module")
def builder(tmp_path_factory):
    return RequestBuilder(SnapshotSet(make_tiny_index(tmp_path_factory.mktemp("request-builder"))))


def test_every_request_type_is_built_the_same_way(builder):
    search = builder.build(SearchRequest, {"query": "cart", "repos": [REPO_NAME], "k": 3})
    grep = builder.build(GrepRequest, {"pattern": "def ", "repos": [REPO_NAME]})
    graph = builder.build(GraphRequest, {"op": "callers", "name": "price_of"})
    assert (search.repos, search.k, grep.repos, graph.repos) == ([REPO_NAME], 3, [REPO_NAME], [])


def test_an_unknown_field_lists_the_known_ones(builder):
    with pytest.raises(QueryError, match=r"unknown request field\(s\) \['colour'\]; known: .*context_budget"):
        builder.build(SearchRequest, {"query": "cart", "colour": "red"})


def test_a_branch_resolves_to_its_published_names_or_says_none_is_indexed(builder):
    assert builder.build(SearchRequest, {"query": "cart", "repos": [REPO_NAME]}, None).repos == [REPO_NAME]
    named = builder.build(SearchRequest, {"query": "cart", "repos": [REPO_NAME]}, "feature")
    assert named.repos == [f"{REPO_NAME}@feature"]  # the pipeline answers an unknown one as unknown
    with pytest.raises(BranchNotIndexed, match="index it with `semantica index --repo PATH --name NAME --ref feature`"):
        builder.build(SearchRequest, {"query": "cart"}, "feature")


def test_the_scope_sees_the_resolved_names(builder):
    seen: list[list[str]] = []
    request = builder.build(GrepRequest, {"pattern": "x", "repos": [REPO_NAME]}, None,
                            lambda names: seen.append(names) or ["only/this"])
    assert seen == [[REPO_NAME]] and request.repos == ["only/this"]


def test_no_front_imports_the_daemon_server():
    """Every front builds its request with `serving.api.request`, the CLI's in-process path too; only the
    daemon's own command imports the daemon server."""
    borrowers = []
    for folder in FRONTS:
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == "daemon.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module == "serving.api.daemon":
                    borrowers.append(str(path.relative_to(ROOT)))
    assert borrowers == []

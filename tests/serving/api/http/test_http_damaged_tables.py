"""A published snapshot whose tables were cut short (symbols, edges, files, history): a question that needs them
is a 503 JSON naming the damaged table, a search degrades the lists that read them, `/v1/repos` lists them, and
the other repository keeps answering."""

from __future__ import annotations

import pytest

from semantica.layout import IndexLayout
from tests.serving.local_ingress import client, local_stage_handles, make_core, run
from tests.serving.ray.test_app import REPO_NAME, make_tiny_index

pytestmark = pytest.mark.timeout(300)
DAMAGED_REPO = "tiny/damaged"
CUT = ("symbols.parquet", "edges.parquet", "files.parquet", "history/commits.parquet")


@pytest.fixture(scope="module")
def core(tmp_path_factory):
    from pipelines.indexer import Indexer

    root = tmp_path_factory.mktemp("http-damaged")
    config = make_tiny_index(root)
    Indexer(config, progress=False).index(str(root / "repo"), DAMAGED_REPO)
    snapshot = IndexLayout(config.paths.index_root).current(DAMAGED_REPO).root
    for relative in CUT:  # a real truncated Parquet file: its footer is gone
        table = snapshot / relative
        assert table.exists(), relative
        table.write_bytes(table.read_bytes()[: table.stat().st_size // 2])
    return make_core(config, local_stage_handles(config))


async def _call(core, method, path, **kwargs):
    async with client(core) as http:
        return await http.request(method, path, **kwargs)


@pytest.mark.parametrize("path, body", [
    ("/v1/map", {"repos": [DAMAGED_REPO]}),
    ("/v1/graph", {"op": "defs", "name": "price_of", "repos": [DAMAGED_REPO]}),
])
def test_a_question_about_the_damaged_snapshot_is_503_json_naming_its_tables(core, path, body):
    answer = run(_call(core, "POST", path, json=body))
    assert answer.status_code == 503, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    message = answer.json()["message"]
    assert "damaged table(s)" in message and "symbols.parquet" in message, message


def test_a_search_degrades_the_lists_that_read_the_damaged_tables(core):
    answer = run(_call(core, "POST", "/v1/search", json={"query": "price of an item", "repos": [DAMAGED_REPO]}))
    assert answer.status_code == 200, answer.text
    degraded = {d["stage"]: d["error"] for d in answer.json()["degraded"]}
    assert "symbols.parquet" in degraded["symbol"], degraded


def test_the_other_repository_keeps_answering(core):
    answer = run(_call(core, "POST", "/v1/graph", json={"op": "defs", "name": "price_of"}))
    assert answer.status_code == 200, answer.text
    assert {a["repo"] for a in answer.json()["answers"]} == {REPO_NAME}
    mapped = run(_call(core, "POST", "/v1/map", json={"repos": [REPO_NAME]}))
    assert mapped.status_code == 200, mapped.text


def test_repos_lists_the_damaged_tables(core):
    listing = {r["repo"]: r for r in run(_call(core, "GET", "/v1/repos")).json()}
    assert listing[REPO_NAME]["status"] == "ok" and listing[REPO_NAME]["damaged_tables"] == []
    row = listing[DAMAGED_REPO]
    assert row["status"] == "broken" and sorted(row["damaged_tables"]) == sorted(CUT)
    assert "symbols.parquet" in row["error"]

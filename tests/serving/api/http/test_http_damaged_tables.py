"""A published snapshot whose tables were cut short (symbols, edges, files, history; NumPy archives and JSON): a
question that needs them is a 503 JSON naming the damaged table, a knowledge entry it cannot verify is refused
before it is stored, a search degrades the lists that read them, `/v1/repos` lists them, and the other repository
keeps answering."""

from __future__ import annotations

import pytest

from semantica.layout import IndexLayout
from tests.serving.local_ingress import client, local_stage_handles, make_core, run
from tests.serving.ray.test_app import REPO_NAME, make_tiny_index

pytestmark = pytest.mark.timeout(300)
DAMAGED_REPO = "tiny/damaged"
CUT = ("symbols.parquet", "edges.parquet", "files.parquet", "history/commits.parquet")
ARRAYS_REPO = "tiny/damaged-arrays"  # its Parquet tables are whole; its NumPy archives and JSON documents are cut
ARRAY_SUFFIXES = (".npz", ".json")


def cut_in_half(table) -> None:
    """A real truncated file: a Parquet footer, a zip directory, a JSON document's end are gone."""
    table.write_bytes(table.read_bytes()[: table.stat().st_size // 2])


@pytest.fixture(scope="module")
def core(tmp_path_factory):
    from pipelines.indexer import Indexer

    root = tmp_path_factory.mktemp("http-damaged")
    config = make_tiny_index(root)
    Indexer(config, progress=False).index(str(root / "repo"), DAMAGED_REPO)
    snapshot = IndexLayout(config.paths.index_root).current(DAMAGED_REPO).root
    for relative in CUT:
        assert (snapshot / relative).exists(), relative
        cut_in_half(snapshot / relative)
    Indexer(config, progress=False).index(str(root / "repo"), ARRAYS_REPO)
    arrays = IndexLayout(config.paths.index_root).current(ARRAYS_REPO).root
    for table in arrays.rglob("*"):
        if table.suffix in ARRAY_SUFFIXES and table.parent != arrays:  # not the manifest: the snapshot stays listed
            cut_in_half(table)
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
    answered = {a["repo"] for a in answer.json()["answers"]}
    assert REPO_NAME in answered and DAMAGED_REPO not in answered
    mapped = run(_call(core, "POST", "/v1/map", json={"repos": [REPO_NAME]}))
    assert mapped.status_code == 200, mapped.text


def test_repos_lists_the_damaged_tables(core):
    listing = {r["repo"]: r for r in run(_call(core, "GET", "/v1/repos")).json()}
    assert listing[REPO_NAME]["status"] == "ok" and listing[REPO_NAME]["damaged_tables"] == []
    row = listing[DAMAGED_REPO]
    assert row["status"] == "broken" and sorted(row["damaged_tables"]) == sorted(CUT)
    assert "symbols.parquet" in row["error"]


def test_repos_lists_damaged_numpy_archives_and_json_documents(core):
    """N11: the localizer's fields.npz, the function vectors' .npz, history.json and the localizer's snapshot.json
    cut short are listed too (before: the repository was 'ok' until a query read them)."""
    row = {r["repo"]: r for r in run(_call(core, "GET", "/v1/repos")).json()}[ARRAYS_REPO]
    damaged = row["damaged_tables"]
    assert row["status"] == "broken", row
    assert any(t.startswith("localizer/") and t.endswith("/fields.npz") for t in damaged), damaged
    assert any(t.startswith("function_vectors/") and t.endswith(".npz") for t in damaged), damaged
    assert "history/history.json" in damaged and any(t.endswith("/snapshot.json") for t in damaged), damaged
    assert not any(t.endswith(".parquet") for t in damaged), damaged


def _entries(core, repo: str) -> list[dict]:
    answer = run(_call(core, "GET", "/v1/knowledge", params={"repo": repo, "status": ["active", "review", "candidate"]}))
    assert answer.status_code == 200, answer.text
    return answer.json()["entries"]


def test_a_knowledge_entry_the_damaged_tables_cannot_verify_is_not_stored(core):
    """N11: the 503 comes before the store is written, so the client's retry cannot store the entry twice (before:
    every 503 left one more copy)."""
    body = {"repo": DAMAGED_REPO, "title": "prices round", "text": "price_of rounds to cents", "symbols": ["price_of"]}
    for _ in range(2):
        answer = run(_call(core, "POST", "/v1/knowledge", json=body))
        assert answer.status_code == 503, answer.text
        assert answer.headers["content-type"].startswith("application/json")
        assert "damaged table(s)" in answer.json()["message"]
    assert _entries(core, DAMAGED_REPO) == []
    whole = run(_call(core, "POST", "/v1/knowledge", json={**body, "repo": REPO_NAME}))
    assert whole.status_code == 201, whole.text
    assert [e["title"] for e in _entries(core, REPO_NAME)] == ["prices round"]

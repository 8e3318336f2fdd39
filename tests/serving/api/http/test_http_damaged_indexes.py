"""A published snapshot whose index files were cut short (a FAISS shard, the token codec's quantizer, a Lucene
segment file, the Lucene commit point, an exact-search SQLite shard) or lost a file its Lucene segment lists:
`/v1/repos` and `/healthz` list it as broken, naming the file, and a query still degrades only the retriever
that reads it."""

from __future__ import annotations

import pytest

from semantica.layout import IndexLayout
from tests.serving.api.http.test_http_damaged_tables import cut_in_half
from tests.serving.local_ingress import client, local_stage_handles, make_core, run
from tests.serving.ray.test_app import REPO_NAME, make_tiny_index

pytestmark = pytest.mark.timeout(300)
LUCENE_DATA = "_0.fdt"  # the segment's stored fields: listed by _0.si, read by every hit
LUCENE_MISSING = "_0.nvd"  # the segment's norms: listed by _0.si
DAMAGE = {  # repository -> (the glob of the file cut in the snapshot, the retriever whose stage degrades)
    "tiny/cut-faiss": ("vectors/*.faiss", "vector"),
    "tiny/cut-lucene": (f"lucene/*/{LUCENE_DATA}", "lexical"),
    "tiny/cut-commit": ("lucene/*/segments_*", "lexical"),
    "tiny/cut-exact": ("exact/*.sqlite", None),
    "tiny/cut-quantizer": ("tokens/pq.faiss", None),
}
MISSING_REPO = "tiny/lost-lucene-file"


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory):
    from pipelines.indexer import Indexer

    root = tmp_path_factory.mktemp("http-damaged-indexes")
    config = make_tiny_index(root)
    layout = IndexLayout(config.paths.index_root)
    cut: dict[str, str] = {}
    for repo, (pattern, _) in DAMAGE.items():
        Indexer(config, progress=False).index(str(root / "repo"), repo)
        snapshot = layout.current(repo).root
        [path] = snapshot.glob(pattern)
        cut_in_half(path)
        cut[repo] = path.relative_to(snapshot).as_posix()
    Indexer(config, progress=False).index(str(root / "repo"), MISSING_REPO)
    snapshot = layout.current(MISSING_REPO).root
    [lost] = snapshot.glob(f"lucene/*/{LUCENE_MISSING}")
    lost.unlink()
    cut[MISSING_REPO] = lost.relative_to(snapshot).as_posix()
    return config, cut


@pytest.fixture(scope="module")
def core(snapshots):
    config, _ = snapshots
    return make_core(config, local_stage_handles(config))


async def _call(core, method, path, **kwargs):
    async with client(core) as http:
        return await http.request(method, path, **kwargs)


def test_repos_lists_each_cut_index_file(core, snapshots):
    """Before: every one of them was 'ok' with no damaged table, until a query opened the file."""
    config, cut = snapshots
    root = config.paths.index_root
    answer = run(_call(core, "GET", "/v1/repos"))
    assert answer.status_code == 200, answer.text
    listing = {r["repo"]: r for r in answer.json()}
    assert listing[REPO_NAME]["status"] == "ok" and listing[REPO_NAME]["damaged_tables"] == []
    for repo, relative in cut.items():
        row = listing[repo]
        assert row["status"] == "broken" and row["damaged_tables"] == [relative], (repo, row)
        assert relative in row["error"] and str(root) not in row["error"], row["error"]  # path-free


def test_healthz_reports_them_broken_and_stays_json(core, snapshots):
    _, cut = snapshots
    answer = run(_call(core, "GET", "/healthz"))
    assert answer.status_code in (200, 503), answer.text
    assert answer.headers["content-type"].startswith("application/json")
    repos = {r["repo"]: r for r in answer.json()["repos"]}
    for repo, relative in cut.items():
        assert repos[repo]["status"] == "broken" and relative in repos[repo]["error"], repos[repo]


@pytest.mark.parametrize("repo", [r for r, (_, stage) in DAMAGE.items() if stage])
def test_a_search_degrades_only_the_retriever_of_the_cut_file(core, repo):
    answer = run(_call(core, "POST", "/v1/search", json={"query": "price of an item", "repos": [repo]}))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    stages = {d["stage"]: d["error"] for d in body["degraded"]}
    assert DAMAGE[repo][1] in stages and "snapshot" not in stages, body["degraded"]
    assert "damaged table(s)" in stages[DAMAGE[repo][1]], stages  # the reader names the cut file
    assert body["hits"], body


@pytest.mark.parametrize("repo", [*DAMAGE, MISSING_REPO])
def test_every_question_about_a_cut_snapshot_is_answered_without_a_500(core, repo):
    """The exact-search shard and the token codec are read by grep and the reranker: never a 500."""
    searched = run(_call(core, "POST", "/v1/search", json={"query": "price of an item", "repos": [repo]}))
    assert searched.status_code == 200, searched.text
    grepped = run(_call(core, "POST", "/v1/grep", json={"pattern": "price_of", "repos": [repo]}))
    assert grepped.status_code in (200, 503), grepped.text
    assert grepped.headers["content-type"].startswith("application/json")

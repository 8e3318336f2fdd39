"""One corrupt or missing snapshot never breaks queries that do not name it, nor the repos listing.

Each case breaks `beta` in a real index and asserts the clear error AND that `alpha` still answers."""

from __future__ import annotations

import json
import os
import shutil
import stat

import pytest

from semantica.api import SearchRequest
from semantica.layout import CURRENT, IndexLayout, RepoState
from semantica.ondisk.layout_errors import BrokenSnapshotError
from semantica.snapshot import SnapshotSet
from serving.pipeline import SearchPipeline
from tests.reliability.conftest import cli

ALPHA_QUERY = "parse_alpha_ledger"


def assert_path_free(text: str, root) -> None:
    assert str(root) not in text and "/tmp/" not in text, text
    assert "\tat " not in text and "\n" not in text, text


def search(config, query: str = ALPHA_QUERY, **kwargs):
    pipeline = SearchPipeline(config)
    return pipeline.search(SearchRequest(query, k=5, late_interaction=False, **kwargs))


def assert_alpha_answers_beta_reported(two_repos) -> dict:
    response = search(two_repos.config)
    assert response.hits and response.hits[0].repo == "alpha" and response.hits[0].symbol == "parse_alpha_ledger"
    assert set(response.snapshots) == {"alpha"}
    (entry,) = [d for d in response.degraded if d["stage"] == "snapshot"]
    assert entry["repo"] == "beta" and entry["error"]
    assert_path_free(entry["error"], two_repos.root)
    listing = {e.repo: e for e in IndexLayout(two_repos.root).listing()}
    assert listing["alpha"].state is RepoState.OK
    health = {h.repo: h for h in SnapshotSet(two_repos.config).health()}
    assert health["alpha"].ok and not health["beta"].ok and health["beta"].error
    assert_path_free(health["beta"].error, two_repos.root)
    with pytest.raises(BrokenSnapshotError, match="beta") as caught:
        search(two_repos.config, repos=["beta"])
    assert_path_free(str(caught.value), two_repos.root)
    return entry


def test_corrupt_manifest(two_repos):
    (two_repos.snapshot_dir("beta") / "manifest.json").write_text("{not json")
    entry = assert_alpha_answers_beta_reported(two_repos)
    assert "JSON" in entry["error"] or "json" in entry["error"].lower()
    listed = cli("repos", "--json", "--index-root", str(two_repos.root))
    assert listed.returncode == 0, listed.stderr
    rows = {r["repo"]: r for r in json.loads(listed.stdout)}
    assert rows["alpha"]["status"] == "ok" and rows["alpha"]["counts"]["chunks"] > 0
    assert rows["beta"]["status"] == "broken" and rows["beta"]["error"]


def test_current_pointing_nowhere(two_repos):
    (IndexLayout(two_repos.root).repo_dir("beta") / CURRENT).write_text("20990101T000000000000-gone-000000\n")
    entry = assert_alpha_answers_beta_reported(two_repos)
    assert "does not exist" in entry["error"]
    text = cli("repos", "--index-root", str(two_repos.root))
    assert text.returncode == 0 and "alpha" in text.stdout and "BROKEN" in text.stdout


def test_missing_chunks_table(two_repos):
    (two_repos.snapshot_dir("beta") / "chunks.parquet").unlink()
    assert_alpha_answers_beta_reported(two_repos)


def test_corrupt_chunks_table(two_repos):
    path = two_repos.snapshot_dir("beta") / "chunks.parquet"
    path.write_bytes(b"PAR1" + os.urandom(64) + b"garbage")
    entry = assert_alpha_answers_beta_reported(two_repos)
    assert "chunks unreadable" in entry["error"]


def test_corrupt_faiss_shard_degrades_only_the_vector_list_of_that_repo(two_repos):
    (shard,) = (two_repos.snapshot_dir("beta") / "vectors").glob("*.faiss")
    shard.write_bytes(b"\x00garbage" * 16)
    response = search(two_repos.config, "rolling checksum of bytes")
    assert "compute_beta_checksum" in [h.symbol for h in response.hits]  # lexical and symbol still answer for beta
    vector = [d for d in response.degraded if d["stage"] == "vector"]
    assert vector and all(d["error"] for d in vector)
    for d in vector:
        assert_path_free(d["error"], two_repos.root)
    assert search(two_repos.config).hits[0].symbol == "parse_alpha_ledger"


def test_corrupt_lucene_shard_gives_no_java_stack_trace(two_repos):
    lucene = two_repos.snapshot_dir("beta") / "lucene"
    for path in lucene.rglob("*"):
        if path.is_file():
            path.write_bytes(b"not a lucene file")
    response = search(two_repos.config, "compute_beta_checksum rolling checksum")
    lexical = [d for d in response.degraded if d["stage"] == "lexical"]
    assert lexical
    for d in lexical:
        assert_path_free(d["error"], two_repos.root)
        assert "at org." not in d["error"] and "Traceback" not in d["error"]
    assert "compute_beta_checksum" in [h.symbol for h in response.hits]  # vector and symbol lists still answer
    assert search(two_repos.config).hits[0].repo == "alpha"


def test_removed_snapshot_directory(two_repos):
    shutil.rmtree(two_repos.snapshot_dir("beta"))
    assert_alpha_answers_beta_reported(two_repos)


def _as_nobody(root: str, answer) -> None:
    """In a forked child (no exec: the venv's interpreter may be unreadable to other users): drop to an
    unprivileged user (root reads everything) and report what the listing and a lookup say."""
    if os.geteuid() == 0:
        os.setgid(65534)
        os.setuid(65534)
    rows = [e.to_dict() for e in IndexLayout(root).listing()]
    try:
        IndexLayout(root).current("beta")
        lookup = "no error"
    except Exception as exc:
        lookup = f"{type(exc).__name__}: {exc}"
    try:
        from pipelines.discover import RepoSource
        from semantica.config import DiscoverConfig

        RepoSource(str(IndexLayout(root).repo_dir("beta") / "inside"), None, DiscoverConfig())
        source = "no error"
    except Exception as exc:
        source = f"{type(exc).__name__}: {exc}"
    answer.put((rows, lookup, source))


def test_permission_denied_is_reported_as_such(two_repos_template):
    import multiprocessing
    import tempfile

    base = tempfile.mkdtemp(prefix="semantica-perm-")  # outside pytest's 0700 tmp dir, so another user may enter
    root = os.path.join(base, "index")
    try:
        os.chmod(base, 0o755)
        shutil.copytree(two_repos_template.root, root)
        for directory, _, _ in os.walk(root):
            os.chmod(directory, 0o755)
        os.chmod(IndexLayout(root).repo_dir("beta"), 0)
        context = multiprocessing.get_context("fork")
        answer = context.Queue()
        child = context.Process(target=_as_nobody, args=(root, answer))
        child.start()
        rows, lookup, source = answer.get(timeout=60)
        child.join(30)
        by_repo = {r["repo"]: r for r in rows}
        assert by_repo["alpha"]["status"] == "ok"
        assert by_repo["beta"]["status"] == "broken" and "permission denied" in by_repo["beta"]["error"]
        assert "does not exist" not in by_repo["beta"]["error"]
        assert_path_free(by_repo["beta"]["error"], root)
        assert lookup.startswith("BrokenSnapshotError") and "permission denied" in lookup, lookup
        assert "permission denied" in source and "does not exist" not in source, source
    finally:
        os.chmod(IndexLayout(root).repo_dir("beta"), stat.S_IRWXU)
        shutil.rmtree(base, ignore_errors=True)


def test_corrupt_symbol_table_degrades_symbol_and_graph_lists_only(two_repos):
    (two_repos.snapshot_dir("beta") / "symbols.parquet").write_bytes(b"PAR1 not parquet PAR1")
    response = search(two_repos.config, "rolling checksum of bytes")
    stages = {d["stage"] for d in response.degraded}
    assert {"symbol", "graph"} <= stages and "snapshot" not in stages
    for d in response.degraded:
        assert_path_free(d["error"], two_repos.root)
    assert "compute_beta_checksum" in [h.symbol for h in response.hits]  # vector and lexical still answer
    health = {h.repo: h for h in SnapshotSet(two_repos.config).health()}
    assert health["alpha"].ok and not health["beta"].ok and "symbols.parquet" in health["beta"].error


def test_missing_faiss_shard_is_reported_by_health(two_repos):
    (shard,) = (two_repos.snapshot_dir("beta") / "vectors").glob("*.faiss")
    shard.unlink()
    health = {h.repo: h for h in SnapshotSet(two_repos.config).health()}
    assert health["alpha"].ok and not health["beta"].ok
    assert f"damaged table(s) vectors/{shard.name} (FileNotFoundError: {shard.name} does not exist)" in health["beta"].error
    response = search(two_repos.config, "rolling checksum of bytes")
    assert [d["stage"] for d in response.degraded] == ["vector"]
    assert "compute_beta_checksum" in [h.symbol for h in response.hits]

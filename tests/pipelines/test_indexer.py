"""The whole indexing pipeline on real repositories: tree-sitter, MiniLM, FAISS, Lucene, publish."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from pipelines.indexer import Indexer
from semantica.layout import CURRENT, IndexLayout
from semantica.runtime.encoder import shared_encoder
from semantica.snapshot import Snapshot
from tests.conftest import REPO_ROOT, REQUESTS_COMMIT, SHORT_EMBEDDINGS, WITHOUT_TOKEN_VECTORS, make_config

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]


def git(repo: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True)


def open_current(config, repo: str) -> Snapshot:
    return Snapshot.open(IndexLayout(config.paths.index_root).current(repo), config)


def test_self_index_has_known_symbols_and_edges(indexed_self):
    snapshot = open_current(indexed_self.config, indexed_self.name)
    symbol_ids = {s.symbol_id for s in snapshot.symbols}
    assert {"semantica/config/loader.py::load_config", "semantica/schema.py::Chunk.build",
            "pipelines/indexer.py::Indexer.index"} <= symbol_ids
    calls = {(e.src, e.dst) for e in snapshot.edges if e.type == "CALLS" and e.resolved}
    assert ("semantica/config/loader.py::load_config", "semantica/config/loader.py::load_sections") in calls
    assert ("semantica/config/loader.py::load_sections", "semantica/config/loader.py::_build") in calls
    assert ("semantica/config/loader.py::_build", "semantica/config/loader.py::_coerce") in calls
    manifest = snapshot.manifest
    assert manifest.counts["chunks"] == len(snapshot.chunks) > 100
    assert manifest.dim == 384 and {s.kind for s in manifest.shards} == {
        "faiss", "function_vectors", "lucene", "exact"}
    assert all(len(s.checksum) == 64 for s in manifest.shards)
    assert indexed_self.summary.chunks_embedded + indexed_self.summary.chunks_reused == manifest.counts["chunks"]


def test_self_index_lucene_finds_identifier_parts(indexed_self):
    snapshot = open_current(indexed_self.config, indexed_self.name)
    (shard,) = snapshot.lucene_shards
    top = [snapshot.chunk_by_id[c].symbol for c, _ in shard.search("coerce", 5)]
    assert "_coerce" in top


def test_self_index_faiss_returns_a_chunk_for_its_own_text(indexed_self):
    snapshot = open_current(indexed_self.config, indexed_self.name)
    encoder = shared_encoder(indexed_self.config.encoder)
    target = next(c for c in snapshot.chunks if c.symbol == "Indexer.index")
    vector = encoder.encode([target.embedding_text()])
    hits = [(score, row) for shard in snapshot.vector_shards  # partitioned by path: the best over every shard
            for score, row in zip(*(a[0] for a in shard.search(vector, 3)))]
    assert snapshot.chunks[max(hits)[1]].chunk_id == target.chunk_id


def test_requests_at_fixed_commit(indexed_requests):
    config, summary = indexed_requests.config, indexed_requests.summary
    assert summary.commit == REQUESTS_COMMIT and summary.files > 10
    snapshot = open_current(config, indexed_requests.name)
    assert "requests/models.py::Request.register_hook" in {s.symbol_id for s in snapshot.symbols}
    calls = {(e.src, e.dst) for e in snapshot.edges if e.type == "CALLS" and e.resolved}
    assert ("requests/models.py::Request.__init__", "requests/models.py::Request.register_hook") in calls
    hits = [snapshot.chunk_by_id[c].symbol for c, _ in snapshot.lucene_shards[0].search("register", 5)]
    assert "Request.register_hook" in hits


@pytest.fixture()
def small_repo(tmp_path) -> Path:
    repo = tmp_path / "small"
    (repo / "pkg").mkdir(parents=True)
    for name in ("config/loader.py", "schema.py", "stores/tokenizer.py"):
        (repo / "pkg" / Path(name).name).write_text((REPO_ROOT / "semantica" / name).read_text())
    (repo / "README.md").write_text("# Small\n\nA test repository.\n\n## Usage\n\nImport pkg.\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    return repo


def test_reindex_after_one_file_change_embeds_only_that_file(small_repo, tmp_path):
    config = make_config(tmp_path / "idx", private_cache=True)
    indexer = Indexer(config, progress=False)
    first = indexer.index(str(small_repo), "small", "HEAD")
    assert first.chunks_embedded > 0 and first.files_parsed == first.files == 4
    path = small_repo / "pkg" / "tokenizer.py"
    path.write_text(path.read_text() + "\n\ndef brand_new_helper(value):\n    return value * 2\n")
    git(small_repo, "commit", "-qam", "two")
    second = indexer.index(str(small_repo), "small", "HEAD")
    snapshot = open_current(config, "small")
    tokenizer_chunks = [c for c in snapshot.chunks if c.path == "pkg/tokenizer.py"]
    assert second.files_parsed == 1 and second.files_reused == 3
    assert 1 <= second.chunks_embedded <= 2  # the new function (and the module window that grew), nothing else
    assert second.chunks_embedded + second.chunks_reused == second.chunks
    assert any(c.symbol == "brand_new_helper" for c in tokenizer_chunks)
    third = indexer.index(str(small_repo), "small", "HEAD")
    assert third.chunks_embedded == 0 and third.files_parsed == 0


def test_killed_build_leaves_current_untouched(small_repo, tmp_path):
    config = make_config(tmp_path / "idx")
    Indexer(config, progress=False).index(str(small_repo), "small", "HEAD")
    layout = IndexLayout(config.paths.index_root)
    before = layout.current_id("small")
    for number in range(40):  # enough new code that the second build takes a while
        (small_repo / "pkg" / f"gen_{number}.py").write_text(
            "\n\n".join(f"def generated_{number}_{i}(x):\n    return x + {i}" for i in range(20)))
    git(small_repo, "add", "-A")
    git(small_repo, "commit", "-qm", "more")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "jobs.cli", "index", "--repo", str(small_repo), "--name", "small", "--commit", "HEAD",
         "--set", f"paths.index_root={config.paths.index_root}", "--set", f"paths.cache_dir={config.paths.cache_dir}"],
        cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    repo_dir = layout.repo_dir("small")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(p.name.endswith(".tmp") for p in repo_dir.iterdir()):
        assert process.poll() is None, "the build finished before it could be killed"
        time.sleep(0.05)
    time.sleep(1.0)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert layout.current_id("small") == before
    snapshot = Snapshot.open(layout.current("small"), config)
    assert snapshot.paths.verify().snapshot_id == before
    assert not any(c.path.startswith("pkg/gen_") for c in snapshot.chunks)
    assert (repo_dir / CURRENT).read_text().strip() == before


def test_bad_inputs_are_refused_with_clear_messages(tmp_path, small_repo):
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    plain = tmp_path / "plain"
    plain.mkdir()

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "jobs.cli", "index", *args, "--index-root", str(tmp_path / "i")],
                              cwd=REPO_ROOT, env=env, capture_output=True, text=True)

    not_git = run("--repo", str(plain))
    assert not_git.returncode == 1 and "not a git repository" in not_git.stderr and "Traceback" not in not_git.stderr
    unknown = run("--repo", str(small_repo), "--commit", "deadbeef")
    assert unknown.returncode == 1 and "not found" in unknown.stderr
    missing = run("--repo", str(tmp_path / "absent"))
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    assert not (tmp_path / "i").exists() or not IndexLayout(tmp_path / "i").repos()


def test_bad_files_are_skipped_and_recorded(tmp_path):
    repo = tmp_path / "bad"
    repo.mkdir()
    (repo / "good.py").write_text("def fine():\n    return 1\n")
    (repo / "blob.bin.py").write_bytes(b"\x00\x01\x02binary")
    (repo / "latin.py").write_bytes("x = 'caf\xe9'\n".encode("latin-1"))
    with open(repo / "huge.py", "wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    (repo / "dangling.py").symlink_to(repo / "nowhere.py")
    (repo / "outside.py").symlink_to("/etc/hostname")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "bad files")
    config = make_config(tmp_path / "idx")
    summary = Indexer(config, progress=False).index(str(repo), "bad")
    snapshot = open_current(config, "bad")
    assert {c.path for c in snapshot.chunks} == {"good.py"}
    errors = {r["path"]: r["reason"] for r in pq.read_table(snapshot.paths.errors).to_pylist()}
    assert "binary" in errors["blob.bin.py"] and "UTF-8" in errors["latin.py"]
    assert "oversized" in errors["huge.py"] and "symlink" in errors["dangling.py"] and "symlink" in errors["outside.py"]
    assert summary.errors == len(errors)


def test_symbols_lost_to_the_parser_nesting_limit_are_recorded(tmp_path):
    repo = tmp_path / "deep"
    repo.mkdir()
    depth = 600  # tree-sitter keeps the innermost ~511 levels; the outer ones used to vanish silently
    (repo / "deep.py").write_text("".join(" " * i + f"class C{i}:\n" for i in range(depth)) + " " * depth + "pass\n")
    (repo / "fine.py").write_text("def fine():\n    return 1\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "deep")
    # each kept class's qualname (C0.C1...) runs to hundreds of tokens, and nothing here reads a vector
    config = make_config(tmp_path / "idx", *WITHOUT_TOKEN_VECTORS, *SHORT_EMBEDDINGS)
    summary = Indexer(config, progress=False).index(str(repo), "deep")
    snapshot = open_current(config, "deep")
    kept = sum(1 for s in snapshot.symbols if s.path == "deep.py")
    errors = {r["path"]: r for r in pq.read_table(snapshot.paths.errors).to_pylist()}
    assert kept < depth and errors["deep.py"]["stage"] == "parse"
    assert f"{depth - kept} definition(s) not extracted" in errors["deep.py"]["reason"]
    assert "fine.py" not in errors and summary.errors == len(errors)


def test_empty_repository_publishes_an_empty_snapshot(tmp_path):
    repo = tmp_path / "empty"
    repo.mkdir()
    git(repo, "init", "-q")
    config = make_config(tmp_path / "idx")
    summary = Indexer(config, progress=False).index(str(repo), "empty")
    assert summary.files == summary.chunks == 0
    snapshot = open_current(config, "empty")
    assert snapshot.chunks == [] and snapshot.manifest.counts["chunks"] == 0
    assert np.asarray(snapshot.vector_shards).size == 0


def test_a_file_name_that_is_not_utf8_does_not_fail_the_build(tmp_path):
    """N8: the parse cache, the tables and the report hold text; such a name is skipped by name, the rest indexed."""
    repo = tmp_path / "names"
    repo.mkdir()
    Path(os.fsdecode(os.fsencode(repo) + b"/caf\xe9.py")).write_bytes(b"def w():\n    pass\n")
    (repo / "ok.py").write_text("def still_indexed():\n    return 1\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "names")
    config = make_config(tmp_path / "idx", *SHORT_EMBEDDINGS, *WITHOUT_TOKEN_VECTORS)
    for commit in (None, "HEAD"):
        summary = Indexer(config, progress=False).index(str(repo), "names", commit)
        assert summary.files == 1
        assert any(e["path"] == "caf\\xe9.py" and "not valid UTF-8" in e["reason"] for e in summary.error_samples)
    assert {c.symbol for c in open_current(config, "names").chunks} >= {"still_indexed"}


def test_a_partial_mirror_missing_a_blob_indexes_the_rest(tmp_path):
    """A mirror fetched without some blobs (a partial clone offline): discovery skips the file it lacks, history
    (whose diffs need every blob) is skipped with a reason, and the rest is published."""
    repo = tmp_path / "partial"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "kept.py").write_text("def kept_function():\n    return 1\n")
    (repo / "lost.py").write_text("def lost_function():\n    return 2\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "two files")
    lost = subprocess.run(["git", "rev-parse", "HEAD:lost.py"], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()
    (repo / ".git" / "objects" / lost[:2] / lost[2:]).unlink()
    config = make_config(tmp_path / "idx", *SHORT_EMBEDDINGS, *WITHOUT_TOKEN_VECTORS)
    lines: list[str] = []
    indexer = Indexer(config, progress=False)
    indexer.log = lines.append
    summary = indexer.index(str(repo), "partial", "HEAD")
    assert summary.files == 1
    assert any(e["path"] == "lost.py" and "missing from the repository" in e["reason"] for e in summary.error_samples)
    assert {c.symbol for c in open_current(config, "partial").chunks} >= {"kept_function"}
    assert any("history skipped" in line for line in lines), lines

"""Faults while indexing, on real indexes: each asserts the clear error AND that nothing was lost
(the other repositories and the previous snapshot still answer)."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipelines.indexer import Indexer
from semantica.api import SearchRequest
from semantica.layout import LOCK_SUFFIX, PUBLISH_LOCK, TMP_SUFFIX, IndexLayout
from semantica.ondisk.build_stats import DEFAULT_FILE
from semantica.snapshot import SnapshotSet
from serving.pipeline import SearchPipeline
from tests.conftest import REPO_ROOT
from tests.reliability.conftest import cli, git, make_repo
from tests.tmpfs import mounted_tmpfs

BUILD_STATS_PREFIX = Path(DEFAULT_FILE).stem  # /metrics build totals beside the repositories, by design
TMPFS_HEADROOM_KIB = 512
FULL_DISK_LIMIT_BYTES = 48 * 1024
# generated files (20 functions each) for the full-disk builds: enough that the parse cache and the snapshot's
# vector shard each outgrow FULL_DISK_LIMIT_BYTES; every one of them is embedded cold by the warm-cache build
FULL_DISK_FILES = 4


def top_symbol(config, query: str, repo: str) -> str:
    response = SearchPipeline(config).search(SearchRequest(query, repos=[repo], k=3, late_interaction=False))
    assert not [d for d in response.degraded if d["stage"] == "snapshot"], response.degraded
    return response.hits[0].symbol if response.hits else ""


def assert_nothing_lost(two_repos, before: dict[str, str]) -> None:
    """Every repository is at the snapshot it had, verifies, and answers its own query."""
    layout = IndexLayout(two_repos.root)
    for repo, snapshot_id in before.items():
        assert layout.current_id(repo) == snapshot_id
        layout.current(repo).verify()
    assert top_symbol(two_repos.config, "parse_alpha_ledger", "alpha") == "parse_alpha_ledger"
    assert top_symbol(two_repos.config, "compute_beta_checksum", "beta") == "compute_beta_checksum"


def current_ids(two_repos) -> dict[str, str]:
    layout = IndexLayout(two_repos.root)
    return {repo: layout.current_id(repo) for repo in layout.repos()}


def leftovers(root: Path) -> list[str]:
    """Build directories and build locks left behind (the per-repository publish lock and the build-stats
    lock of /metrics stay by design)."""
    return sorted(p.name for p in root.rglob("*") if p.name.endswith((TMP_SUFFIX, LOCK_SUFFIX))
                  and p.name != PUBLISH_LOCK and not p.name.startswith(BUILD_STATS_PREFIX))


def test_binary_huge_non_utf8_and_symlinked_files_are_skipped_and_recorded(two_repos, tmp_path):
    before = current_ids(two_repos)
    repo = tmp_path / "gamma"
    repo.mkdir()
    (repo / "good.py").write_text("def gamma_is_fine():\n    return 1\n")
    (repo / "blob.py").write_bytes(b"\x00\x01\x02binary\x00")
    (repo / "latin.py").write_bytes("x = 'caf\xe9'\n".encode("latin-1"))
    with open(repo / "huge.py", "wb") as handle:
        handle.truncate(64 * 1024 * 1024)  # sparse: 64 MiB of NULs without the disk
    (repo / "inside.py").symlink_to("good.py")
    (repo / "outside.py").symlink_to("/etc/hostname")
    (repo / "dangling.py").symlink_to(repo / "nowhere.py")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "bad files")
    summary = Indexer(two_repos.config, progress=False).index(str(repo), "gamma")
    snapshot = SnapshotSet(two_repos.config).get("gamma")
    assert {c.path for c in snapshot.chunks} == {"good.py"}
    reasons = {r["path"]: r["reason"] for r in pq.read_table(snapshot.paths.errors).to_pylist()}
    assert "binary" in reasons["blob.py"] and "UTF-8" in reasons["latin.py"] and "oversized" in reasons["huge.py"]
    assert all("symlink" in reasons[p] for p in ("inside.py", "outside.py", "dangling.py"))
    assert summary.errors == len(reasons) == 6
    assert_nothing_lost(two_repos, before)


def test_slash_and_plus_names_index_into_separate_snapshots(two_repos):
    """The data loss this guards against: `a+b` and `a/b` shared one directory, so one replaced the other."""
    indexer = Indexer(two_repos.config, progress=False)
    indexer.index(str(two_repos.alpha), "team/lib")
    indexer.index(str(two_repos.beta), "team+lib")
    assert top_symbol(two_repos.config, "parse_alpha_ledger", "team/lib") == "parse_alpha_ledger"
    assert top_symbol(two_repos.config, "compute_beta_checksum", "team+lib") == "compute_beta_checksum"
    listed = json.loads(cli("repos", "--json", "--index-root", str(two_repos.root)).stdout)
    assert {r["repo"] for r in listed} == {"alpha", "beta", "team/lib", "team+lib"}
    assert all(r["status"] == "ok" for r in listed)


def test_bad_name_is_refused_before_any_work(two_repos):
    before = current_ids(two_repos)
    for bad in ("..", "a\nb", "/"):
        result = cli("index", "--repo", str(two_repos.alpha), "--name", bad, "--index-root", str(two_repos.root))
        assert result.returncode == 1 and "repository name" in result.stderr and "Traceback" not in result.stderr
    assert sorted(p.name for p in two_repos.root.iterdir() if p.is_dir()) == ["alpha", "beta"]
    assert_nothing_lost(two_repos, before)


def test_concurrent_builds_of_one_repo_publish_a_whole_snapshot(two_repos):
    before = current_ids(two_repos)
    layout = IndexLayout(two_repos.root)
    results: list[str] = []
    errors: list[BaseException] = []

    def build() -> None:
        try:
            results.append(Indexer(two_repos.config, progress=False).index(str(two_repos.alpha), "alpha").snapshot_id)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=build) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not errors and len(results) == 3
    assert layout.current_id("alpha") in results
    layout.current("alpha").verify()
    assert leftovers(two_repos.root) == []
    published = [p for p in layout.repo_dir("alpha").iterdir() if p.is_dir()]
    assert len(published) <= two_repos.config.index.keep_snapshots
    before["alpha"] = layout.current_id("alpha")
    assert_nothing_lost(two_repos, before)


def _grow(repo: Path, files: int) -> None:
    for number in range(files):
        (repo / f"gen_{number}.py").write_text(
            "\n\n".join(f"def generated_{number}_{i}(x):\n    return x + {i}" for i in range(20)))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "more")


def test_killed_build_keeps_the_previous_snapshot_and_the_next_build_removes_its_tmp(two_repos, tmp_path):
    repo = make_repo(tmp_path / "alpha-work", {"ledger.py": (two_repos.alpha / "ledger.py").read_text()})
    before = current_ids(two_repos)
    _grow(repo, 40)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "jobs.cli", "index", "--repo", str(repo), "--name", "alpha",
         "--index-root", str(two_repos.root), "--set", f"paths.cache_dir={tmp_path / 'private-cache'}"],
        cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    repo_dir = IndexLayout(two_repos.root).repo_dir("alpha")
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and not any(p.name.endswith(TMP_SUFFIX) for p in repo_dir.iterdir()):
        assert process.poll() is None, "the build finished before it could be killed"
        time.sleep(0.05)
    time.sleep(1.0)
    process.send_signal(signal.SIGKILL)
    process.wait()
    stale = [p.name for p in repo_dir.iterdir() if p.name.endswith(TMP_SUFFIX)]
    assert stale, "the killed build left no .tmp (nothing to test)"
    assert_nothing_lost(two_repos, before)
    summary = Indexer(two_repos.config, progress=False).index(str(two_repos.alpha), "alpha")
    assert not any((repo_dir / name).exists() for name in stale)
    assert leftovers(two_repos.root) == []
    before["alpha"] = summary.snapshot_id
    assert_nothing_lost(two_repos, before)


def _limit_file_size(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit then fails with EFBIG, like a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


@pytest.mark.parametrize("warm_cache", [False, True], ids=["fails-in-cache", "fails-in-snapshot"])
def test_full_disk_fails_the_build_cleanly(two_repos, tmp_path, warm_cache):
    """A file system that refuses writes (RLIMIT_FSIZE: no root or tmpfs needed) mid-build: in the
    parse cache, or (every file cached by an earlier build) while writing the snapshot's shards."""
    repo = make_repo(tmp_path / "alpha-big", {"ledger.py": (two_repos.alpha / "ledger.py").read_text()})
    _grow(repo, FULL_DISK_FILES)
    cache = tmp_path / "private-cache"
    if warm_cache:
        assert cli("index", "--repo", str(repo), "--name", "alpha", "--index-root", str(tmp_path / "scratch"),
                   "--set", f"paths.cache_dir={cache}").returncode == 0
    before = current_ids(two_repos)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "jobs.cli", "index", "--repo", str(repo), "--name", "alpha",
         "--index-root", str(two_repos.root), "--set", f"paths.cache_dir={cache}"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, preexec_fn=_limit_file_size(FULL_DISK_LIMIT_BYTES), timeout=600)
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("semantica index: error:") and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert any(word in last.lower() for word in ("too large", "disk", "space", "full")), last
    print(f"full disk ({'snapshot' if warm_cache else 'cache'}): {last}")
    assert leftovers(two_repos.root) == []
    assert_nothing_lost(two_repos, before)


def test_full_tmpfs_fails_the_build_cleanly(two_repos, tmp_path):
    """A real ENOSPC: the index root on a tiny tmpfs (needs root and mount rights; skipped loudly otherwise)."""
    import shutil

    used_kib = sum(f.stat().st_blocks * 512 // 1024 + (4 if f.is_dir() else 0) for f in two_repos.root.rglob("*"))
    size = f"size={used_kib + TMPFS_HEADROOM_KIB}k"  # the published snapshots fit; the next build does not
    with mounted_tmpfs(tmp_path / "tiny", size,
                       "test_full_disk_fails_the_build_cleanly covers a full disk with RLIMIT_FSIZE") as mount_point:
        root = mount_point / "index"
        shutil.copytree(two_repos.root, root)
        two_repos.root = root
        two_repos.config.paths.index_root = str(root)
        repo = make_repo(tmp_path / "alpha-big", {"ledger.py": (two_repos.alpha / "ledger.py").read_text()})
        _grow(repo, 30)
        before = current_ids(two_repos)
        result = cli("index", "--repo", str(repo), "--name", "alpha", "--index-root", str(root),
                     "--set", f"paths.cache_dir={tmp_path / 'private-cache'}")
        assert result.returncode == 1, result.stderr[-2000:]
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith("semantica index: error:") and "Traceback" not in result.stderr, result.stderr[-2000:]
        assert "space" in last.lower(), last
        assert leftovers(root) == []
        assert_nothing_lost(two_repos, before)


def test_missing_model_path_is_a_clear_error_and_loses_nothing(two_repos, tmp_path):
    before = current_ids(two_repos)
    missing = tmp_path / "no-such-model"
    result = cli("index", "--repo", str(two_repos.alpha), "--name", "alpha", "--index-root", str(two_repos.root),
                 "--set", f"encoder.model_path={missing}", "--set", f"paths.cache_dir={tmp_path / 'private-cache'}")
    assert result.returncode == 1 and "encoder.model_path" in result.stderr and "Traceback" not in result.stderr
    assert leftovers(two_repos.root) == []
    assert_nothing_lost(two_repos, before)
    from tests.conftest import make_config

    config = make_config(tmp_path, f"encoder.model_path={missing}")
    config.paths.index_root = str(two_repos.root)
    response = SearchPipeline(config).search(SearchRequest("parse_alpha_ledger", k=3, late_interaction=False))
    assert response.hits[0].symbol == "parse_alpha_ledger"  # lexical and symbol lists still answer
    vector = [d for d in response.degraded if d["stage"] == "vector"]
    assert vector and all("model_path" in d["error"] and str(tmp_path) not in d["error"] for d in vector)


def test_builds_publishing_meanwhile_never_prune_the_snapshot_a_build_links_from(two_repos, monkeypatch):
    """The concurrent-build race, made deterministic: while one build hard-links shards from the published
    snapshot, two more builds publish (retention keeps 2, so the second prunes). The linked-from snapshot
    stays until that build is done, so every shard is linked (none vanishes under it) and it publishes."""
    from pipelines.shards import ShardLinker

    layout = IndexLayout(two_repos.root)
    linked_from = layout.current_id("alpha")
    link = ShardLinker.link
    others: list[str] = []
    interleaved: list[bool] = []

    def link_after_two_publishes(self, relative: str, kind: str) -> bool:
        if not interleaved:  # the first link of the first build; the other two link as they are
            interleaved.append(True)
            for _ in range(2):
                others.append(Indexer(two_repos.config, progress=False).index(str(two_repos.alpha), "alpha").snapshot_id)
            assert (layout.repo_dir("alpha") / linked_from).is_dir(), "retention pruned a snapshot being linked"
        return link(self, relative, kind)

    monkeypatch.setattr(ShardLinker, "link", link_after_two_publishes)
    summary = Indexer(two_repos.config, progress=False).index(str(two_repos.alpha), "alpha")
    assert len(others) == 2 and summary.shards_linked > 0 and summary.shards_written == 0
    assert layout.current_id("alpha") == summary.snapshot_id
    layout.current("alpha").verify()
    published = sorted(p.name for p in layout.repo_dir("alpha").iterdir() if p.is_dir())
    assert published == sorted([others[-1], summary.snapshot_id])
    assert leftovers(two_repos.root) == []

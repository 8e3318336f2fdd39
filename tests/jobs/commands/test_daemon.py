"""`semantica query` through the warm daemon, end to end with real subprocesses: started on first use,
answers like the in-process pipeline, picks up a new snapshot, reports errors as one line, stops."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time

import pytest

from pipelines.indexer import Indexer
from semantica.daemon_protocol import DaemonPaths
from tests.conftest import REPO_ROOT, make_config
from tests.dated_git import one_commit_repo
from tests.serving.rerankers.test_late_stored import FILES, QUERY

REPO = "t/daemon"
NEW_FILE = ("cache/lru.py", 'def evict_least_recently_used(cache):\n    """Drop the oldest cache entry."""\n'
                            "    cache.popitem(last=False)\n")


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run([sys.executable, "-m", "jobs.cli", *args], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("daemon")
    repo = one_commit_repo(tmp / "repo", FILES)
    config = make_config(tmp)
    Indexer(config, progress=False).index(str(repo), REPO)
    common = ["--index-root", config.paths.index_root, "--set", f"paths.cache_dir={config.paths.cache_dir}",
              "--set", "daemon.enabled=true"]
    config.daemon.enabled = True
    yield config, repo, common
    cli("daemon", "stop", *common)


def test_query_starts_a_daemon_that_answers_like_in_process(indexed, tmp_path) -> None:
    config, repo, common = indexed
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    fallback = cli("query", QUERY, "--json", *common, "--set", f"daemon.run_dir={not_a_dir}")  # cannot start: in-process
    assert fallback.returncode == 0 and "answering in this process" in fallback.stderr, fallback.stderr

    first = cli("query", QUERY, "--json", *common)
    assert first.returncode == 0, first.stderr
    paths = DaemonPaths.of(config, str(REPO_ROOT))
    assert paths.socket.exists() and stat.S_IMODE(paths.socket.stat().st_mode) == 0o600
    assert stat.S_IMODE(paths.socket.parent.stat().st_mode) == 0o700
    via_daemon, in_process = json.loads(first.stdout), json.loads(fallback.stdout)
    assert [h["chunk_id"] for h in via_daemon["hits"]] == [h["chunk_id"] for h in in_process["hits"]]
    assert via_daemon["hits"][0]["path"] == "net/retry.py"

    status = cli("daemon", "status", "--json", *common)
    (mine,) = [s for s in json.loads(status.stdout) if s["current"]]
    assert mine["ready"] and mine["requests"] == 1 and mine["pid"] != os.getpid()

    readable = cli("query", QUERY, "--k", "2", *common)  # the human output from a daemon answer
    assert readable.returncode == 0 and "net/retry.py:" in readable.stdout, readable.stderr
    bad = cli("query", QUERY, "--k", "0", *common)
    assert bad.returncode == 1 and "k must be" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    unknown = cli("query", QUERY, "--repo", "no/such", *common)
    assert unknown.returncode == 1 and "no published snapshot" in unknown.stderr, unknown.stderr


def test_daemon_serves_a_new_snapshot_then_stops(indexed) -> None:
    config, repo, common = indexed
    before = json.loads(cli("query", "evict least recently used cache entry", "--json", *common).stdout)
    path, text = NEW_FILE
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@e.com", "-c", "user.name=t", "commit", "-qm", "lru"],
                   check=True)
    Indexer(config, progress=False).index(str(repo), REPO)
    after = json.loads(cli("query", "evict least recently used cache entry", "--json", *common).stdout)
    assert after["snapshots"][REPO] != before["snapshots"][REPO]
    assert after["hits"][0]["path"] == path

    socket = DaemonPaths.of(config, str(REPO_ROOT)).socket
    stopped = cli("daemon", "stop", *common)
    assert stopped.returncode == 0 and "stopped 1 daemon" in stopped.stderr
    deadline = time.monotonic() + 10
    while socket.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not socket.exists()
    assert not [s for s in json.loads(cli("daemon", "status", "--json", *common).stdout) if s["current"]]

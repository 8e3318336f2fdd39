"""The daemon server in a thread: idle timeout, a removed socket, garbage input, an unknown op."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from pipelines.indexer import Indexer
from semantica.daemon_protocol import ask, receive
from serving.api.daemon import QueryDaemon
from tests.conftest import make_config
from tests.dated_git import one_commit_repo
from tests.serving.rerankers.test_late_stored import FILES, QUERY


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("daemon-thread")
    config = make_config(tmp, "daemon.idle_timeout_s=1.0", "late_interaction.enabled=false")
    Indexer(config, progress=False).index(str(one_commit_repo(tmp / "repo", FILES)), "t/thread")
    return config


def _serve(daemon: QueryDaemon) -> threading.Thread:
    thread = threading.Thread(target=daemon.serve, daemon=True)
    thread.start()
    return thread


def test_daemon_answers_then_exits_when_idle(config, tmp_path) -> None:
    path = tmp_path / "d.sock"
    path.write_text("stale")  # a leftover file where the socket goes is replaced
    daemon = QueryDaemon(config, path, "test")
    thread = _serve(daemon)
    answer = ask(path, {"op": "search", "request": {"query": QUERY, "k": 3}}, 120)
    assert answer["ok"] and answer["response"]["hits"][0]["path"] == "net/retry.py"
    assert ask(path, {"op": "nope"}, 5) == {"ok": False, "error": "ValueError", "kind": "invalid",
                                           "message": "unknown op 'nope'; known: search, status, stop"}
    unknown = ask(path, {"op": "search", "request": {"query": QUERY, "repos": ["no/such"]}}, 30)
    assert unknown["kind"] == "not_found" and "(indexed: t/thread)" in unknown["message"]  # the owner sees all
    bad = ask(path, {"op": "search", "request": {"query": QUERY, "bogus": 1}}, 5)
    assert not bad["ok"] and "bogus" in bad["message"]
    with socket.socket(socket.AF_UNIX) as raw:  # not JSON: the connection is closed, the daemon lives on
        raw.connect(str(path))
        raw.sendall(b"not json\n")
        with pytest.raises(Exception, match="closed the connection"):
            receive(raw)
    assert ask(path, {"op": "status"}, 5)["status"]["requests"] == 3
    thread.join(timeout=30)  # idle_timeout_s=1
    assert not thread.is_alive() and not path.exists()


def test_daemon_exits_when_its_socket_is_removed(config, tmp_path) -> None:
    path = tmp_path / "d.sock"
    daemon = QueryDaemon(config, path, "test")
    config.daemon.idle_timeout_s = 600.0
    thread = _serve(daemon)
    assert ask(path, {"op": "status"}, 60)["ok"]
    path.unlink()  # e.g. another daemon took its place, or the user cleaned the run directory
    started = time.monotonic()
    thread.join(timeout=30)
    assert not thread.is_alive() and time.monotonic() - started < 30

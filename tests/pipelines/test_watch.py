"""`semantica watch`: a real inotify watcher over a small git repository; an edit becomes queryable."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

from pipelines.sync import SyncResult
from pipelines.watch import DebouncedTrigger, RepoWatcher
from semantica.api import SearchRequest
from serving.pipeline import SearchPipeline
from tests.conftest import make_config

WAIT_S = 120  # generous: the machine is shared; the speed target lives in the benchmark, not here


def test_debounce_runs_once_per_burst() -> None:
    calls: list[float] = []
    done = threading.Event()
    trigger = DebouncedTrigger(0.2, lambda: (calls.append(time.monotonic()), done.set()))
    trigger.start()
    for _ in range(10):
        trigger.poke()
        time.sleep(0.02)
    assert done.wait(10)
    time.sleep(0.5)
    trigger.stop()
    assert len(calls) == 1


def test_edit_becomes_queryable(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "app").mkdir(parents=True)
    (repo / "app" / "shop.py").write_text("def checkout(cart):\n    return sum(cart)\n")
    (repo / "app" / "users.py").write_text("def login(name):\n    return name\n")
    (repo / ".gitignore").write_text(".semantica/\n")  # the index lives inside the watched tree (as in a checkout)
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "init"],
                   check=True)
    # the index's own writes inside the watched tree must not trigger syncs
    config = make_config(repo / ".semantica", "watch.debounce_ms=100", "late_interaction.enabled=false")
    synced: list[SyncResult] = []
    errors: list[Exception] = []
    watcher = RepoWatcher(config, str(repo), "t/shop", on_sync=synced.append, on_error=errors.append)
    first = watcher.sync_now()
    assert first.reindexed and first.reason == "first index"
    pipeline = SearchPipeline(config)
    watcher.start()
    try:
        time.sleep(0.5)
        (repo / "app" / "shop.py").write_text("def checkout(cart):\n    return sum(cart)\n\n\n"
                                              "def apply_voucher_discount(cart, voucher):\n    return sum(cart) - voucher\n")
        deadline = time.monotonic() + WAIT_S
        found = False
        while time.monotonic() < deadline and not found:
            response = pipeline.search(SearchRequest(query="apply_voucher_discount", k=3))
            found = any("apply_voucher_discount" in h.content for h in response.hits)
            time.sleep(0.2)
        assert found, f"the edit was not queryable within {WAIT_S}s (syncs {synced}, errors {errors})"
        assert response.freshness["t/shop"]["stale"] is False
        time.sleep(1.0)  # nothing else changes: no further sync
    finally:
        watcher.stop()
    assert not errors
    reindexed = [s for s in synced if s.reindexed]
    assert len(reindexed) == 1 and reindexed[0].edited == ["app/shop.py"] and reindexed[0].files_parsed == 1

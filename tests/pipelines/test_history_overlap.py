"""A build reads its repository's history (git log with diffs) beside the parse and the model passes instead of
after them, and publishes what a serial read publishes; with `index.dense_later` the complete successor holds the
tables a default build writes. git is the system boundary: a `git` first on PATH marks each `log` it is asked for,
then runs the real one; a runner (the in-process one, recording) waits for that mark before its model passes."""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
from pathlib import Path

import pytest

from pipelines.indexer import Indexer
from pipelines.runner import LocalRunner
from semantica.layout import IndexLayout
from semantica.snapshot import Snapshot, read_parquet
from tests.conftest import make_config
from tests.dated_git import commit, one_commit_repo

pytestmark = pytest.mark.timeout(600)
REPO = "overlap/ledger"
MARK_WAIT_S = 20.0  # far above starting git log on a two-commit repository
TABLES = ("chunks", "symbols", "edges", "errors", "pagerank", "files")
FILES = {
    "ledger/book.py": "def post_entry(book, amount):\n    book.append(amount)\n    return sum(book)\n",
    "ledger/report.py": "from ledger.book import post_entry\n\n\ndef monthly_report(book):\n"
                        "    return post_entry(book, 0)\n",
}


class LogWitness(LocalRunner):
    """The in-process runner; records whether a `git log` had started before its model passes began."""

    mark: Path
    seen: list[bool] = []

    def run(self, tasks, tokens=None):  # noqa: ANN001, ANN201
        deadline = time.monotonic() + MARK_WAIT_S
        while not self.mark.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        LogWitness.seen.append(self.mark.exists())
        return super().run(tasks, tokens)


def _repo(root: Path) -> Path:
    repo = one_commit_repo(root / "repo", {"ledger/book.py": FILES["ledger/book.py"]})
    commit(repo, FILES, "fix: the monthly report posts nothing", 2)
    return repo


def _marking_git(root: Path, monkeypatch) -> Path:  # noqa: ANN001
    mark, bin_dir = root / "log-started", root / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "git"
    fake.write_text(f'#!/bin/sh\ncase " $* " in *" log "*) : > "{mark}";; esac\nexec "{shutil.which("git")}" "$@"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return mark


def _tables(config) -> dict[str, list[dict]]:
    snapshot = Snapshot.open(IndexLayout(config.paths.index_root).current(REPO), config)
    found = {name: read_parquet(getattr(snapshot.paths, name)).to_pylist() for name in TABLES}
    history = snapshot.paths.root / "history"
    found["history"] = read_parquet(history / "commits.parquet").to_pylist()
    found["history_read"] = [json.loads((history / "history.json").read_text())]
    return found


def test_the_history_is_read_beside_the_model_passes(tmp_path, monkeypatch):
    repo = _repo(tmp_path)
    config = make_config(tmp_path, "token_vectors.enabled=false", private_cache=True)
    runner = LogWitness(config, progress=False)
    runner.mark = _marking_git(tmp_path, monkeypatch)
    LogWitness.seen = []
    Indexer(config, runner, progress=False).index(str(repo), REPO)
    assert LogWitness.seen == [True]
    assert _tables(config)["history_read"][0]["read_commits"] == 2


def test_a_dense_later_build_ends_with_a_default_builds_tables(tmp_path):
    repo = _repo(tmp_path)
    built = {}
    for later in (False, True):
        config = make_config(tmp_path / str(later), f"index.dense_later={str(later).lower()}", private_cache=True)
        summary = Indexer(config, progress=False).index(str(repo), REPO)
        built[later] = _tables(config), summary
    (default, default_summary), (later, later_summary) = built[False], built[True]
    assert later == default and default["history_read"][0]["read_commits"] == 2 and default["chunks"]
    assert (later_summary.chunks, later_summary.symbols, later_summary.edges) == (
        default_summary.chunks, default_summary.symbols, default_summary.edges)

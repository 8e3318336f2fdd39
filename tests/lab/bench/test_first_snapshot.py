"""lab.bench.first_snapshot: the first `index.dense_later` snapshot is published and stays current, no successor."""

from __future__ import annotations

from lab.bench.first_snapshot import main
from pipelines.indexer import DENSE_KINDS
from semantica.config import load_config
from semantica.layout import IndexLayout
from semantica.snapshot import Snapshot
from tests.dated_git import one_commit_repo

FILES = {"ledger/book.py": "def post_entry(book, amount):\n    book.append(amount)\n    return sum(book)\n"}


def test_the_first_snapshot_stays_current_with_its_dense_kinds_pending(tmp_path):
    repo = one_commit_repo(tmp_path / "repo", FILES)
    index, cache = tmp_path / "index", tmp_path / "cache"
    assert main(["--repo", str(repo), "--name", "ledger", "--index-root", str(index), "--cache-dir", str(cache)]) == 0
    config = load_config(None, [f"paths.index_root={index}", f"paths.cache_dir={cache}"], environ={})
    current = Snapshot.open(IndexLayout(index).current("ledger"), config)
    assert current.manifest.pending == list(DENSE_KINDS) and current.manifest.counts["chunks"] >= 1
    assert [p.name for p in (index / "ledger").iterdir() if p.is_dir()] == [current.snapshot_id]

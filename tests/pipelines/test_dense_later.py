"""`index.dense_later`: `semantica index` publishes a first snapshot before any model pass runs (Lucene, symbols,
graph, history written; chunk, token and function vectors pending), answers from it say what is still building,
and the complete successor of the same commit replaces it atomically."""

from __future__ import annotations

import pytest

from pipelines.indexer import DENSE_KINDS, FIRST_ANSWER_STAGE, Indexer
from pipelines.runner import LocalRunner
from semantica.api import SearchRequest
from semantica.layout import IndexLayout
from semantica.ondisk.layout_errors import UnknownRepoError
from semantica.snapshot import Snapshot
from serving.pipeline import PENDING, SearchPipeline
from tests.conftest import make_config
from tests.dated_git import one_commit_repo

pytestmark = pytest.mark.timeout(600)
REPO = "later/ledger"
FILES = {
    "ledger/book.py": "def post_entry(book, amount):\n    book.append(amount)\n    return sum(book)\n\n\n"
                      "class Ledger:\n    def balance(self):\n        return 0\n",
    "ledger/report.py": "from ledger.book import post_entry\n\n\ndef monthly_report(book):\n"
                        "    return post_entry(book, 0)\n",
}


class FirstSnapshotWitness(LocalRunner):
    """The in-process runner, recording what is current when the model passes start."""

    seen: list[Snapshot]
    answers: list = []

    def run(self, tasks, tokens=None):  # noqa: ANN001, ANN201
        try:
            current = IndexLayout(self.config.paths.index_root).current(REPO)
        except UnknownRepoError:
            self.seen = []
        else:
            self.seen = [Snapshot.open(current, self.config)]
            self.answers = [SearchPipeline(self.config).search(SearchRequest("post_entry", k=5, repos=[REPO]))]
        return super().run(tasks, tokens)


def test_the_first_snapshot_answers_before_the_models_and_its_successor_completes_it(tmp_path):
    repo = one_commit_repo(tmp_path / "repo", FILES)
    config = make_config(tmp_path, "index.dense_later=true", "token_vectors.quantization=int8",
                         "token_vectors.dim=384", private_cache=True)
    runner = FirstSnapshotWitness(config, progress=False)
    summary = Indexer(config, runner, progress=False).index(str(repo), REPO)

    first = runner.seen[0]
    assert first.manifest.pending == list(DENSE_KINDS)
    assert not first.shard_paths("faiss") and not first.manifest.token_vectors
    assert "function_vectors" not in first.manifest.counts
    assert first.manifest.counts["localizer_files"] == 2 and first.manifest.counts["symbols"] >= 4
    answer = runner.answers[0]
    assert answer.hits and answer.hits[0].path == "ledger/book.py"  # lexical and symbol indexes answer
    assert {d["stage"] for d in answer.degraded if d["error"] == PENDING} == set(DENSE_KINDS)

    final = Snapshot.open(IndexLayout(config.paths.index_root).current(REPO), config)
    assert final.snapshot_id == summary.snapshot_id != first.snapshot_id and final.manifest.commit == first.manifest.commit
    assert final.manifest.pending == [] and final.shard_paths("faiss") and final.manifest.token_vectors
    assert final.manifest.counts["function_vectors"] == 3  # post_entry, Ledger.balance, monthly_report
    assert final.manifest.stats["shard_reuse"]["linked"].get("lucene", 0) >= 1  # the first snapshot's shards, linked
    assert summary.files_parsed == 2 and 0 < summary.seconds[FIRST_ANSWER_STAGE]
    done = SearchPipeline(config).search(SearchRequest("post_entry", k=5, repos=[REPO]))
    assert not [d for d in done.degraded if d["error"] == PENDING]


def test_off_by_default_one_snapshot_is_published_complete(tmp_path):
    repo = one_commit_repo(tmp_path / "repo", FILES)
    config = make_config(tmp_path, "token_vectors.enabled=false", private_cache=True)
    runner = FirstSnapshotWitness(config, progress=False)
    summary = Indexer(config, runner, progress=False).index(str(repo), REPO)
    assert runner.seen == []  # nothing is current while the model passes run
    final = Snapshot.open(IndexLayout(config.paths.index_root).current(REPO), config)
    assert final.manifest.pending == [] and final.shard_paths("faiss") and FIRST_ANSWER_STAGE not in summary.seconds

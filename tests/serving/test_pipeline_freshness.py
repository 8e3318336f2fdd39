"""Each answer's freshness (`git status` of its source, a subprocess) is checked while its stages run, not after
them, and says what a check after them says. git is the system boundary: a `git` first on PATH marks each
`status` it is asked for, then runs the real one; a registered retriever (the documented extension point) waits,
inside the query, for that mark."""

from __future__ import annotations

import os
import shutil
import stat
import time
from pathlib import Path

import pytest

from pipelines.indexer import Indexer
from semantica.api import SearchRequest
from serving.pipeline import SearchPipeline
from serving.retrievers.base import BaseRetriever, RetrievalQuery, ScoredList
from serving.retrievers.registry import register_retriever, unregister_retriever
from tests.conftest import make_config
from tests.dated_git import one_commit_repo

pytestmark = pytest.mark.timeout(600)
REPO = "fresh/shop"
WITNESS = "freshwitness"
MARK_WAIT_S = 20.0  # far above a git status of a two-file repository
FILES = {"shop/prices.py": "PRICES = {'apple': 3}\n\n\ndef price_of(name):\n    return PRICES.get(name, 0)\n"}


class StatusWitness(BaseRetriever):
    """Returns nothing; records whether a `git status` had been started by the time the query retrieved."""

    seen: list[bool] = []

    def __init__(self, snapshot, mark: Path) -> None:  # noqa: ANN001
        super().__init__(snapshot.chunk_by_id)
        self.mark = mark

    def _search(self, query: RetrievalQuery, k: int) -> ScoredList:
        deadline = time.monotonic() + MARK_WAIT_S
        while not self.mark.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        StatusWitness.seen.append(self.mark.exists())
        return []


def test_freshness_is_checked_while_the_stages_run(tmp_path, monkeypatch):
    repo = one_commit_repo(tmp_path / "repo", FILES)
    mark, bin_dir = tmp_path / "status-started", tmp_path / "bin"
    register_retriever(WITNESS, lambda r: StatusWitness(r.snapshot, mark))
    try:
        answer, expected = _answer_and_reference(tmp_path, repo, mark, bin_dir, monkeypatch)
    finally:
        unregister_retriever(WITNESS)
    assert StatusWitness.seen == [True]  # the check had started before retrieval ended
    assert answer.hits and answer.hits[0].path == "shop/prices.py"
    fresh = answer.freshness[REPO]
    how = ("check_ms", "checked_by")  # the reference check reuses the answer's: the tree is unchanged since
    assert {k: v for k, v in fresh.items() if k not in how} == {k: v for k, v in expected.items() if k not in how}
    assert fresh["stale"] is False


def _answer_and_reference(tmp_path, repo, mark, bin_dir, monkeypatch):  # noqa: ANN001, ANN202
    """The answer with the marking git on PATH, and the freshness a check after the query gives."""
    config = make_config(tmp_path, f"retrieval.retrievers=[vector,lexical,symbol,graph,exact,{WITNESS}]",
                         f"fusion.rrf_k.{WITNESS}=60", f"fusion.extra_weights.{WITNESS}=1.0",
                         "token_vectors.enabled=false")
    Indexer(config, progress=False).index(str(repo), REPO)  # a working tree: its freshness is a git status
    bin_dir.mkdir()
    fake = bin_dir / "git"
    fake.write_text(f'#!/bin/sh\ncase " $* " in *" status "*) : > "{mark}";; esac\nexec "{shutil.which("git")}" "$@"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    StatusWitness.seen = []
    pipeline = SearchPipeline(config)
    answer = pipeline.search(SearchRequest("price_of", k=5, repos=[REPO]))
    return answer, pipeline.freshness([pipeline.snapshots.get(REPO)])[REPO]

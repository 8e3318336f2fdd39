"""A cold query's loads run side by side: while one retriever (the lexical one, which starts the JVM) or one index
kind is still being built, the others build beside it instead of waiting for it; each is still built once, and
the answer equals the one a process that loaded everything in turn gives. Real index, real retrievers; the
held build is a registered retriever or index kind (the documented extension points) that waits on an event."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pipelines.indexer import Indexer
from semantica.api import SearchRequest
from semantica.layout import IndexLayout
from semantica.snapshot import Snapshot
from semantica.stores.index_kinds import register_index_kind, unregister_index_kind
from serving.pipeline import SearchPipeline
from serving.retrievers.registry import register_retriever, unregister_retriever
from serving.retrievers.repo import RepoRetrievers
from tests.conftest import make_config
from tests.dated_git import one_commit_repo

pytestmark = pytest.mark.timeout(600)
REPO = "parallel/shop"
HELD = "held"
BUILD_WAIT_S = 60  # far above what building the symbol retriever or the token reader of this index takes
FILES = {
    "shop/cart.py": "from shop.prices import price_of\n\n\nclass Cart:\n    def total(self, items):\n"
                    "        return sum(price_of(n) for n in items)\n",
    "shop/prices.py": "PRICES = {'apple': 3}\n\n\ndef price_of(name):\n    return PRICES.get(name, 0)\n",
}


class HeldBuild:
    """A build that does not finish until `release()`; counts how often it ran."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self._release = threading.Event()
        self.calls = 0

    def __call__(self, *_: Any) -> str:
        self.calls += 1
        self.started.set()
        self._release.wait(BUILD_WAIT_S)
        return HELD

    def release(self) -> None:
        self._release.set()


class HeldKind:
    """An index kind whose reader opens only when released."""

    name = HELD
    directories = ()

    def __init__(self, build: HeldBuild) -> None:
        self.build = build

    def write(self, context: Any) -> Any:
        raise AssertionError("never written: the kind is registered for reading only")

    def open(self, snapshot: Any) -> str:
        return self.build(snapshot)


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    root = tmp_path_factory.mktemp("parallel")
    config = make_config(root)
    Indexer(config, progress=False).index(str(one_commit_repo(root / "repo", FILES)), REPO)
    return config


def _snapshot(config) -> Snapshot:
    return Snapshot.open(IndexLayout(config.paths.index_root).current(REPO), config)


def _while_held(held: HeldBuild, hold: Any, other: Any) -> bool:
    """Start `hold()` (which waits in `held`), then `other()` on its own thread: whether `other` finished while
    `hold` was still held."""
    holder = threading.Thread(target=hold)
    holder.start()
    assert held.started.wait(BUILD_WAIT_S)
    worker = threading.Thread(target=other)
    worker.start()
    worker.join(BUILD_WAIT_S / 2)
    finished = not worker.is_alive()
    held.release()
    holder.join()
    worker.join()
    return finished


def test_a_retriever_builds_while_another_is_still_building(config):
    held = HeldBuild()
    register_retriever(HELD, held)
    try:
        retrievers = RepoRetrievers(_snapshot(config), lambda: None)
        built: list[Any] = []
        assert _while_held(held, lambda: retrievers.get(HELD), lambda: built.append(retrievers.get("symbol")))
        assert built and retrievers.built() == {HELD, "symbol"}
    finally:
        unregister_retriever(HELD)


def test_a_retriever_asked_twice_meanwhile_is_built_once(config):
    held = HeldBuild()
    register_retriever(HELD, held)
    try:
        retrievers = RepoRetrievers(_snapshot(config), lambda: None)
        answers: list[Any] = []
        first = threading.Thread(target=lambda: answers.append(retrievers.get(HELD)))
        first.start()
        assert held.started.wait(BUILD_WAIT_S)
        second = threading.Thread(target=lambda: answers.append(retrievers.get(HELD)))
        second.start()
        held.release()
        first.join()
        second.join()
        assert answers == [HELD, HELD] and held.calls == 1
    finally:
        unregister_retriever(HELD)


def test_an_index_kind_opens_while_another_is_still_opening(config):
    held = HeldBuild()
    register_index_kind(HeldKind(held))
    try:
        snapshot = _snapshot(config)
        opened: list[Any] = []
        assert _while_held(held, lambda: snapshot.index(HELD), lambda: opened.append(snapshot.token_vectors))
        assert opened and opened[0] is not None and snapshot.opened() == {HELD, "tokens"}
    finally:
        unregister_index_kind(HELD)


def test_the_parallel_loads_answer_as_loads_in_turn(config):
    """Prefetch (every load at once) and no prefetch (each load when the query reaches it) give one answer."""
    answers = []
    for prefetch in (True, False):
        pipeline = SearchPipeline(config)
        request = SearchRequest("price_of", k=5, repos=[REPO])
        if prefetch:
            pipeline.prefetch([REPO], [], request.query).wait()
        answer = pipeline.search(request).to_dict()
        answers.append({k: v for k, v in answer.items() if k not in ("timings_ms", "freshness")})
    assert answers[0] == answers[1] and answers[0]["hits"][0]["path"] == "shop/prices.py"

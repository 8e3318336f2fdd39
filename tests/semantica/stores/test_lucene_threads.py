"""Lucene searchers of different indexes searched from many threads at once (a multi-repository query
fans out per repository). pyjnius binds a Java method to its instance by mutating one object shared by
every instance of the class (kivy/pyjnius#563), so two searchers called at once could run one's call on
the other's object: NullPointerExceptions and swapped results. Every call into the JVM holds one lock."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from semantica.config import LuceneConfig
from semantica.stores.lucene import LuceneDoc, LuceneShardSearcher, LuceneShardWriter
from semantica.stores.lucene_multi import LuceneMultiShardSearcher

WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta"]
ROUNDS = 300


def _shard(directory, prefix: str) -> None:
    writer = LuceneShardWriter(directory, LuceneConfig())
    writer.add([LuceneDoc(f"{prefix}-{i}", f"def {w}_{prefix}(x):\n    return {w} + {i}", f"{prefix}/{w}.py", w)
                for i, w in enumerate(WORDS)])
    writer.close()


@pytest.fixture(scope="module")
def searchers(tmp_path_factory):
    root = tmp_path_factory.mktemp("threads")
    for prefix in ("left", "right"):
        _shard(root / prefix, prefix)
    config = LuceneConfig()
    return [LuceneMultiShardSearcher([root / "left"], config), LuceneMultiShardSearcher([root / "right"], config),
            LuceneShardSearcher(root / "left", config), LuceneShardSearcher(root / "right", config)]


def test_concurrent_searches_over_different_indexes_answer_as_sequential_ones(searchers):
    calls = [(s, WORDS[i % len(WORDS)]) for i in range(ROUNDS) for s in searchers]
    expected = [s.search(word, 3) for s, word in calls]
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(lambda call: call[0].search(call[1], 3), calls))
    assert got == expected  # no LuceneError, and every answer from its own index
    assert all(hits and hits[0][0].split("-")[0] in ("left", "right") for hits in got)

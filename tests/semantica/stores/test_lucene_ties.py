"""Equal BM25 scores are ordered by chunk id, as Anserini orders them, whether the k-th score's ties fit in the
hits read by score alone or reach past them (then Lucene sorts by id): the answer never depends on the order
documents were written in."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from semantica.config import LuceneConfig
from semantica.stores.lucene import LuceneDoc, LuceneShardWriter
from semantica.stores.lucene_multi import TIE_MARGIN, LuceneMultiShardSearcher

SEED = 5
SHARDS = 2
FEW_TIED = 3  # a tie group that fits in the extra hits read
MANY_TIED = 3 * TIE_MARGIN  # one that reaches past them
DISTINCT = 12  # documents above the tie groups, each scoring differently


def documents() -> list[tuple[str, str]]:
    """(id, text): distinct documents first by score, then two groups of identical texts (equal scores)."""
    docs = [(f"distinct-{n:02d}", "needle " * (DISTINCT - n) + "filler words") for n in range(DISTINCT)]
    docs += [(f"few-{n:02d}", "needle hay") for n in range(FEW_TIED)]
    docs += [(f"many-{n:03d}", "needle hay hay hay stack") for n in range(MANY_TIED)]
    return docs


@pytest.fixture(scope="module")
def searcher(tmp_path_factory):
    """Shards written in a shuffled order, so Lucene's document numbers do not follow the ids."""
    root: Path = tmp_path_factory.mktemp("ties")
    docs = documents()
    random.Random(SEED).shuffle(docs)
    dirs = []
    for shard in range(SHARDS):
        writer = LuceneShardWriter(root / f"shard{shard}", LuceneConfig())
        writer.add(LuceneDoc(doc_id, text, doc_id, doc_id) for doc_id, text in docs[shard::SHARDS])
        writer.close()
        dirs.append(root / f"shard{shard}")
    opened = LuceneMultiShardSearcher(dirs, LuceneConfig())
    yield opened
    opened.close()


def expected(searcher: LuceneMultiShardSearcher, k: int) -> list[tuple[str, float]]:
    """Every match, ordered by score then id, cut at k."""
    every = searcher.search("needle", len(documents()))
    return sorted(every, key=lambda hit: (-hit[1], hit[0]))[:k]


def cuts(searcher: LuceneMultiShardSearcher) -> list[int]:
    """Depths that cut inside each tie group, at its edges and past it."""
    every = expected(searcher, len(documents()))
    depths = {1, len(every)}
    for group in ("few", "many"):
        positions = [n for n, (doc_id, _) in enumerate(every) if doc_id.startswith(group)]
        depths |= {positions[0], positions[0] + 1, positions[len(positions) // 2], positions[-1], positions[-1] + 1}
    return sorted(d for d in depths if d > 0)


def test_equal_scores_come_in_id_order_at_every_cut(searcher) -> None:
    for k in cuts(searcher):
        hits = searcher.search("needle", k)
        assert hits == expected(searcher, k), k
        assert len(hits) == k


def test_each_tie_group_scores_equally(searcher) -> None:
    hits = searcher.search("needle", len(documents()))
    assert len(hits) == len(documents())
    for group in ("few", "many"):
        assert len({score for doc_id, score in hits if doc_id.startswith(group)}) == 1  # the cuts above cut a tie

"""The vector retriever's merge of every shard's hits equals `merge_scored` over the per-shard lists, ties and a
chunk in two shards included."""

from __future__ import annotations

import random

import numpy as np

from serving.retrievers.base import merge_scored
from serving.retrievers.vector import VectorRetriever


def test_the_merge_reads_down_to_the_kth_chunk_and_equals_merge_scored() -> None:
    rng = random.Random(11)
    for trial in range(300):
        chunk_ids = [f"c{n:04d}" for n in range(rng.choice([5, 50, 400]))]
        retriever = VectorRetriever.__new__(VectorRetriever)
        retriever.chunk_ids = chunk_ids
        shards, k = rng.randint(1, 12), rng.choice([1, 3, 10, 100])
        per_shard = []
        for _ in range(shards):  # each shard's best-first hits; a few scores, so ties are everywhere
            hits = [(rng.randrange(len(chunk_ids)), np.float32(rng.choice([0.9, 0.5, 0.5, 0.25, rng.random()])))
                    for _ in range(min(k, rng.randint(0, 30)))]
            per_shard.append(sorted(hits, key=lambda hit: -hit[1]))
        lists = [[(chunk_ids[r], float(s)) for r, s in hits] for hits in per_shard]
        scores = np.array([s for hits in per_shard for _, s in hits], dtype=np.float32)
        rows = np.array([r for hits in per_shard for r, _ in hits], dtype=np.int64)
        assert retriever._best(scores, rows, k) == merge_scored(lists, k), trial

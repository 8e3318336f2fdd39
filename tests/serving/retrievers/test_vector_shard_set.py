"""One FAISS call over every shard answers what each shard searched alone answers: the best `k` chunks by score,
equal scores by chunk id, on shards written to disk and read back memory-mapped, with exact duplicates across
shards (ties at every cut) and a chunk stored in two shards; an IVF shard beside flat ones too."""

from __future__ import annotations

import numpy as np
import pytest

from semantica.config import FaissConfig
from semantica.schema import Chunk
from semantica.stores.vectors import VectorShardPaths, VectorShardSearcher, write_shard
from serving.retrievers.base import RetrievalQuery, merge_scored
from serving.retrievers.vector import TIE_SLACK, VectorRetriever

DIM = 32
QUERIES = 40


def chunk(n: int) -> Chunk:
    return Chunk(chunk_id=f"c{n:05d}", repo="r", path=f"src/m{n % 7}.py", language="python", start_line=1,
                 end_line=2, kind="function", symbol=f"f{n}", content=f"def f{n}(): pass", content_sha="")


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def write_shards(tmp_path, rng: np.random.Generator, sizes: list[int], config: FaissConfig) -> tuple[list, int, np.ndarray]:
    """Shards of `sizes` vectors; a fifth of each shard repeats vectors of the shard before it (other chunks, the
    same scores), and the first row of each shard after the first is the previous shard's first chunk again."""
    shards, row, previous, first = [], 0, None, None
    for number, size in enumerate(sizes):
        vectors = unit(rng, size)
        rows = np.arange(row, row + size, dtype=np.int64)
        if previous is not None:
            repeated = min(size // 5, len(previous[0]))
            vectors[:repeated] = previous[0][:repeated]
            rows[0] = previous[1][0]  # one chunk in two shards
        paths = VectorShardPaths.of(tmp_path, f"shard{number}")
        write_shard(paths, vectors, rows, config)
        shards.append(VectorShardSearcher(paths, config))
        previous, row = (vectors, rows), row + size
        first = vectors if first is None else first
    return shards, row, first


def every_hit(shards: list[VectorShardSearcher], chunk_ids: list[str], vector: np.ndarray, k: int) -> list:
    """The reference: each shard searched alone for all its vectors, merged by score then chunk id."""
    lists = []
    for shard in shards:
        scores, rows = shard.search(vector.reshape(1, -1), shard.index.ntotal)
        lists.append([(chunk_ids[r], float(s)) for r, s in zip(rows[0], scores[0]) if r >= 0])
    return merge_scored(lists, k)


@pytest.mark.parametrize(("sizes", "config"), [
    ([300, 40, 700, 5, 300], FaissConfig()),
    ([2500, 400], FaissConfig(flat_max_vectors=1000, ivf_nlist=16, pq_m=8, nprobe=16)),  # an IVF-PQ shard first
])
def test_one_call_over_the_shards_equals_each_shard_alone(tmp_path, sizes: list[int], config: FaissConfig) -> None:
    rng = np.random.default_rng(21)
    shards, total, stored = write_shards(tmp_path, rng, sizes, config)
    chunks = [chunk(n) for n in range(total)]
    queries = {f"q{n}": vector for n, vector in enumerate(unit(rng, QUERIES))}
    queries.update({f"dup{n}": stored[n] for n in range(5)})  # a stored vector as the query: its duplicates tie first
    retriever = VectorRetriever(shards, chunks, lambda text: queries[text])
    chunk_ids = [c.chunk_id for c in chunks]
    for text, vector in queries.items():
        for k in (1, 10, 100, total, total + TIE_SLACK + 3):
            assert retriever._search(RetrievalQuery(text=text), k) == every_hit(shards, chunk_ids, vector, k), (text, k)


def test_a_set_without_shards_answers_nothing() -> None:
    retriever = VectorRetriever([], [chunk(0)], lambda text: np.zeros(DIM, np.float32))
    assert retriever._search(RetrievalQuery(text="anything"), 10) == []

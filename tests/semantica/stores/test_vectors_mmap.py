"""FAISS shards are read memory-mapped and answer exactly like a whole read."""

from __future__ import annotations

import faiss
import numpy as np

from semantica.config import FaissConfig
from semantica.stores.vectors import VectorShardPaths, VectorShardSearcher, read_index_mmap, write_shard


def test_flat_and_ivf_shards_read_memory_mapped_answer_the_same(tmp_path) -> None:
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(3000, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for name, config in (("flat", FaissConfig()), ("ivf", FaissConfig(flat_max_vectors=100, ivf_nlist=16, pq_m=8))):
        paths = VectorShardPaths.of(tmp_path, name)
        write_shard(paths, vectors, np.arange(len(vectors)), config)
        mapped = read_index_mmap(paths.index)
        whole = faiss.read_index(str(paths.index))
        if isinstance(whole, faiss.IndexIVF):
            whole.nprobe = mapped.nprobe = config.nprobe
        want = whole.search(vectors[:5], 10)
        got = mapped.search(vectors[:5], 10)
        assert np.array_equal(got[1], want[1]) and np.allclose(got[0], want[0]), name
        scores, rows = VectorShardSearcher(paths, config).search(vectors[:1], 3)
        assert rows[0][0] == 0 and scores[0][0] > 0.5

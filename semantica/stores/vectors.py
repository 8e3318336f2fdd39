"""FAISS shards: exact inner product for small shards, IVF-PQ for large ones; GPU when present.

Each shard is `<name>.faiss` plus `<name>.ids.npy` (row -> chunk id index into chunks.parquet order).
Vectors are unit length, so inner product is cosine similarity.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import faiss
import numpy as np

from semantica.config import FaissConfig

_MIN_TRAIN_POINTS_PER_CENTROID = 39

_OMP_LOCK = threading.Lock()


@contextmanager
def omp_threads(count: int) -> Iterator[None]:
    """FAISS's OpenMP threads set to `count` for the block (0: left as is), then restored. One query's
    search, or a small codec fit, is too small to split: each parallel region still wakes every worker
    thread, which on a loaded machine waits for a core. OpenMP's setting is per process, so blocks run
    one at a time."""
    if count <= 0:
        yield
        return
    with _OMP_LOCK:
        before = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(count)
        try:
            yield
        finally:
            faiss.omp_set_num_threads(before)


class VectorIndexError(RuntimeError):
    """A FAISS shard could not be built or read."""


def gpu_available() -> bool:
    """True when this faiss build has GPU support and sees a device (the `gpu` extra)."""
    return hasattr(faiss, "get_num_gpus") and faiss.get_num_gpus() > 0


def build_index(vectors: np.ndarray, config: FaissConfig) -> faiss.Index:
    """Flat IP up to `flat_max_vectors`, else IVF-PQ trained on the shard itself."""
    count, dim = vectors.shape
    if count <= config.flat_max_vectors:
        index: faiss.Index = faiss.IndexFlatIP(dim)
    else:
        nlist = min(config.ivf_nlist, max(1, count // _MIN_TRAIN_POINTS_PER_CENTROID))
        pq_m = config.pq_m if dim % config.pq_m == 0 else math.gcd(dim, config.pq_m)
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFPQ(quantizer, dim, nlist, pq_m, config.pq_bits, faiss.METRIC_INNER_PRODUCT)
        index.train(vectors)
        index.nprobe = config.nprobe
    index.add(vectors)
    return index


@dataclass
class VectorShardPaths:
    """The two files of one shard."""

    index: Path
    ids: Path

    @staticmethod
    def of(directory: Path, name: str) -> VectorShardPaths:
        return VectorShardPaths(directory / f"{name}.faiss", directory / f"{name}.ids.npy")


def write_shard(paths: VectorShardPaths, vectors: np.ndarray, rows: np.ndarray, config: FaissConfig) -> None:
    """Build and write one shard; `rows` maps each vector to its chunk row number."""
    if len(vectors) != len(rows):
        raise VectorIndexError(f"{len(vectors)} vectors but {len(rows)} row ids")
    paths.index.parent.mkdir(parents=True, exist_ok=True)
    index = build_index(np.ascontiguousarray(vectors, dtype=np.float32), config)
    faiss.write_index(index, str(paths.index))
    np.save(paths.ids, rows.astype(np.int64))


def read_index_mmap(path: Path) -> faiss.Index:
    """Read a shard memory-mapped where this FAISS build can (IVF lists; flat codes via IO_FLAG_MMAP_IFC):
    pages load on demand and are shared by every process serving the snapshot. Else read it whole."""
    flags = faiss.IO_FLAG_MMAP | getattr(faiss, "IO_FLAG_MMAP_IFC", 0)
    try:
        return faiss.read_index(str(path), flags)
    except RuntimeError:  # an index type without mmap support (e.g. HNSW)
        return faiss.read_index(str(path))


class VectorShardSearcher:
    """Searches one shard; moves it to the GPU when one is available."""

    def __init__(self, paths: VectorShardPaths, config: FaissConfig) -> None:
        if not paths.index.exists():
            raise VectorIndexError(f"missing FAISS shard {paths.index}")
        index = read_index_mmap(paths.index)
        if isinstance(index, faiss.IndexIVF):
            index.nprobe = config.nprobe
        if gpu_available():
            index = faiss.index_cpu_to_gpu(faiss.StandardGpuResources(), 0, index)
        self.index = index
        self.rows = np.load(paths.ids)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, chunk rows), each (n_queries, k); -1 rows where fewer than k exist."""
        k = min(k, self.index.ntotal)
        if k <= 0:
            empty = np.zeros((len(queries), 0))
            return empty, empty.astype(np.int64)
        scores, positions = self.index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
        rows = np.where(positions >= 0, self.rows[np.clip(positions, 0, None)], -1)
        return scores, rows


class VectorShardSet:
    """Every shard of a snapshot searched by one FAISS call (`IndexShards`): a call per shard releases and takes
    back the GIL each time, and beside a retriever thread running Python each take-back waits for the switch
    interval (spring-framework's 64 shards: 7.7 ms alone, 339 ms beside a busy thread). Each shard scores its
    vectors as its own search would; the set's best `k` are the shards' merged."""

    def __init__(self, shards: list[VectorShardSearcher]) -> None:
        self.shards = shards  # the set holds FAISS pointers to their indexes
        self.index = faiss.IndexShards(shards[0].index.d, False, True) if shards else None  # in turn; ids follow on
        for shard in shards:
            self.index.add_shard(shard.index)
        self.rows = np.concatenate([shard.rows for shard in shards]) if shards else np.zeros(0, np.int64)
        self.total = len(self.rows)

    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, chunk rows) of one query's best `k` vectors over every shard, best first."""
        k = min(k, self.total)
        if k <= 0 or self.index is None:
            return np.zeros(0, np.float32), np.zeros(0, np.int64)
        scores, positions = self.index.search(np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1), k)
        found = positions[0] >= 0
        return scores[0][found], self.rows[positions[0][found]]

"""MMR (maximal marginal relevance) over the candidates' stored embeddings, for the mmr_diverse mode.

The vectors come back from the snapshot's FAISS shards (`reconstruct`: exact for flat shards, the PQ
approximation for IVF-PQ ones), so diversity costs no encoder pass.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

import numpy as np

from semantica.hits import Hit
from semantica.snapshot import Snapshot


class StoredVectors:
    """Chunk id -> its stored embedding, read from the snapshot's FAISS shards (positions indexed once)."""

    def __init__(self) -> None:
        self._positions: dict[str, dict[int, tuple[int, int]]] = {}
        self._lock = threading.Lock()

    def _where(self, snapshot: Snapshot) -> dict[int, tuple[int, int]]:
        with self._lock:
            found = self._positions.get(snapshot.snapshot_id)
            if found is None:
                found = {}
                for shard_no, shard in enumerate(snapshot.vector_shards):
                    for position, row in enumerate(shard.rows.tolist()):
                        found[int(row)] = (shard_no, position)
                self._positions[snapshot.snapshot_id] = found
            return found

    def get(self, chunk_ids: Sequence[str], snapshots: Sequence[Snapshot]) -> dict[str, np.ndarray]:
        """The vectors found (a chunk of no searched snapshot, or a shard that cannot reconstruct, is absent)."""
        out: dict[str, np.ndarray] = {}
        for snapshot in snapshots:
            rows = snapshot.chunk_row
            wanted = [c for c in chunk_ids if c in rows and c not in out]
            if not wanted:
                continue
            where = self._where(snapshot)
            shards = snapshot.vector_shards
            for chunk_id in wanted:
                place = where.get(rows[chunk_id])
                if place is None:
                    continue
                index = shards[place[0]].index
                if hasattr(index, "make_direct_map") and not getattr(index, "direct_map", None):
                    index.make_direct_map()
                out[chunk_id] = np.asarray(index.reconstruct(place[1]), dtype=np.float32)
        return out


def mmr_order(hits: Sequence[Hit], vectors: Mapping[str, np.ndarray], lam: float, top_n: int) -> list[Hit]:
    """Greedy MMR over the first `top_n` hits: argmax lam * rel - (1 - lam) * max cosine to the picked.
    Relevance is the hit score scaled to [0, 1]; a hit without a vector keeps its relevance only."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"planning.modes.mmr_lambda must be in [0, 1], got {lam}")
    head, tail = list(hits[:top_n]), list(hits[top_n:])
    if len(head) < 2:
        return head + tail
    scores = np.array([h.score for h in head], dtype=np.float64)
    low, high = scores.min(), scores.max()
    relevance = (scores - low) / (high - low) if high > low else np.ones_like(scores)
    units = {}
    for h in head:
        v = vectors.get(h.chunk_id)
        if v is not None and np.linalg.norm(v) > 0:
            units[h.chunk_id] = v / np.linalg.norm(v)
    picked: list[int] = []
    left = list(range(len(head)))
    while left:
        best, best_value = left[0], float("-inf")
        for i in left:
            v = units.get(head[i].chunk_id)
            redundancy = max((float(v @ units[head[j].chunk_id]) for j in picked
                              if v is not None and head[j].chunk_id in units), default=0.0)
            value = lam * relevance[i] - (1.0 - lam) * redundancy
            if value > best_value:
                best, best_value = i, value
        picked.append(best)
        left.remove(best)
    return [head[i] for i in picked] + tail

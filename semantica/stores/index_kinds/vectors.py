"""FAISS vector shards (`vectors/`): one per partition piece, keyed by the encoder, the index settings and
the vectors' bytes. Row ids are always rewritten (rows move when another partition grows)."""

from __future__ import annotations

from typing import Any

import numpy as np

from semantica.ondisk.snapshot_paths import VECTORS_DIR
from semantica.schema import ShardInfo
from semantica.stores.index_kinds.base import KindWritten, WriteContext
from semantica.stores.index_kinds.sharding import content_key, pieces, shard_name
from semantica.stores.vectors import VectorShardPaths, VectorShardSearcher, write_shard

KIND = "faiss"


class VectorsKind:
    name = KIND
    directories = (VECTORS_DIR,)

    def write(self, context: WriteContext) -> KindWritten:
        inputs, faiss, root = context.inputs, context.config.faiss, context.root
        dim = int(inputs.vectors.shape[1]) if inputs.vectors.ndim == 2 else 0
        header = [inputs.model_id, str(dim), f"{faiss.flat_max_vectors}/{faiss.ivf_nlist}/{faiss.pq_m}/{faiss.pq_bits}"]
        shards: list[ShardInfo] = []
        for number, partition in enumerate(context.rows):
            for piece, part in enumerate(pieces(partition, faiss.shard_max_vectors)):
                vectors = np.ascontiguousarray(inputs.vectors[part], dtype=np.float32)
                name = shard_name(number, piece, content_key(KIND, header, [vectors.tobytes()]))
                paths = VectorShardPaths.of(root / VECTORS_DIR, name)
                if context.linker.link(f"{VECTORS_DIR}/{paths.index.name}", KIND):
                    np.save(paths.ids, part.astype(np.int64))  # rows are this snapshot's
                else:
                    write_shard(paths, vectors, part, faiss)
                shards.append(ShardInfo(KIND, f"{VECTORS_DIR}/{paths.index.name}", len(part), ""))
        return KindWritten(shards)

    def open(self, snapshot: Any) -> list[VectorShardSearcher]:
        return [VectorShardSearcher(VectorShardPaths(p, p.with_name(p.name.removesuffix(".faiss") + ".ids.npy")),
                                    snapshot.config.faiss)
                for p in snapshot.shard_paths(KIND)]

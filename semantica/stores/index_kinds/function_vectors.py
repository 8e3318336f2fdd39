"""The dense function channel's vectors (`function_vectors/p<partition>s00-<key>.npz`): every function's source (any
language with function spans) encoded by `localizer.dense_model` when `localizer.dense_at_index`, so the channel's
first query over a snapshot encodes only the query. The vectors are computed by the indexing runner
(`pipelines.function_vectors`: in process or on Ray Data's actors, cached by source sha); this kind only shards them
by the files' partitions. A shard is keyed by the encoder, its length and every (function key, source sha) it
holds: an unchanged partition is hard-linked from the previous snapshot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from semantica.schema import ShardInfo
from semantica.stores.index_kinds.base import KindWritten, WriteContext
from semantica.stores.index_kinds.sharding import content_key, partition_of, shard_name
from semantica.stores.localizer.dense import StoredFunctionVectors

KIND = "function_vectors"
VECTORS_DIR = "function_vectors"
FORMAT = 2
SHARD_PIECE = 0  # a partition's functions are one shard (float16 rows: small beside its chunk vectors)


def load_vectors(files: list[Path]) -> Any:
    """The `StoredFunctionVectors` of a snapshot's shards, joined (one model: a snapshot is written by one)."""
    keys: list[str] = []
    shas: list[str] = []
    blocks: list[np.ndarray] = []
    model_id = ""
    for file in files:
        with np.load(file, allow_pickle=False) as z:
            model_id = str(z["model_id"])
            keys += z["keys"].tolist()
            shas += z["shas"].tolist()
            blocks.append(z["vectors"])
    vectors = np.concatenate(blocks) if blocks else np.zeros((0, 0), np.float16)
    return StoredFunctionVectors(model_id, {k: n for n, k in enumerate(keys)}, shas, vectors)


class FunctionVectorsKind:
    name = KIND
    directories = (VECTORS_DIR,)

    def write(self, context: WriteContext) -> KindWritten:
        stored = context.inputs.functions  # pipelines.function_vectors.StoredFunctions
        if stored is None:
            return KindWritten()
        by_partition: dict[int, list[str]] = {}
        for path in sorted(stored.files):
            if stored.files[path].keys:
                by_partition.setdefault(partition_of(path, context.partitions), []).append(path)
        header = [str(FORMAT), stored.model_id, str(stored.max_length)]
        shards: list[ShardInfo] = []
        for number in sorted(by_partition):
            files = [stored.files[path] for path in by_partition[number]]
            keys = [k for f in files for k in f.keys]
            shas = [s for f in files for s in f.shas]
            key = content_key(KIND, header, (f"{k}\x00{s}" for k, s in zip(keys, shas)))
            relative = f"{VECTORS_DIR}/{shard_name(number, SHARD_PIECE, key)}.npz"
            if not context.linker.link(relative, KIND):
                target = context.root / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                np.savez(target, keys=np.array(keys, dtype=str), shas=np.array(shas, dtype=str),
                         vectors=np.concatenate([f.vectors for f in files]).astype(np.float16),
                         model_id=np.array(stored.model_id))
            shards.append(ShardInfo(KIND, relative, len(keys), ""))
        return KindWritten(shards, counts={"function_vectors": sum(s.count for s in shards),
                                           "function_vectors_encoded": stored.encoded})

    def open(self, snapshot: Any) -> Any:
        """The snapshot's `StoredFunctionVectors`; None for a snapshot built without them."""
        if KIND not in snapshot.manifest.counts:
            return None
        return load_vectors(snapshot.shard_paths(KIND))

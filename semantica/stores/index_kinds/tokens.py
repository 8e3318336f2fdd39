"""Stored late-interaction token vectors (`tokens/`, semantica.stores.token_vectors): codes, scales and offsets per
partition piece, keyed by the codec, the encoder and each chunk's content sha and token count; `rows.npy`
and the codec are always rewritten. Listed in `manifest.token_vectors`, not in `manifest.shards`."""

from __future__ import annotations

from typing import Any

import numpy as np

from semantica.ondisk.snapshot_paths import TOKENS_DIR
from semantica.stores.index_kinds.base import KindWritten, WriteContext
from semantica.stores.index_kinds.sharding import content_key, pieces, shard_name
from semantica.stores.token_vectors import (
    ROWS_FILE,
    StoredTokenVectors,
    TokenVectorsInfo,
    token_vectors_info,
    write_token_part,
)

KIND = "tokens"


class TokensKind:
    name = KIND
    directories = (TOKENS_DIR,)

    def write(self, context: WriteContext) -> KindWritten:
        inputs = context.inputs
        if inputs.token_vectors is None or not inputs.chunks:  # no chunks: no codec to fit on zero vectors
            return KindWritten()
        builder = inputs.token_vectors
        codes = builder.codes([c.content_sha for c in inputs.chunks])
        codec = builder.codec
        assert codec is not None
        directory = context.root / TOKENS_DIR
        directory.mkdir(parents=True, exist_ok=True)
        where = np.zeros((len(inputs.chunks), 2), dtype=np.int64)  # chunk row -> (part, row in part)
        names: list[str] = []
        tokens = 0
        for number, partition in enumerate(context.rows):
            for piece, part in enumerate(pieces(partition, context.config.faiss.shard_max_vectors)):
                key = content_key(KIND, [codec.sha, builder.model_id, str(builder.max_length)],
                                  (f"{inputs.chunks[int(r)].content_sha}:{len(codes[int(r)][0])}" for r in part))
                name = shard_name(number, piece, key)
                if not context.linker.link(f"{TOKENS_DIR}/{name}", KIND):
                    write_token_part(directory / name, codec, [codes[int(r)] for r in part])
                tokens += sum(len(codes[int(r)][0]) for r in part)
                where[part, 0] = len(names)
                where[part, 1] = np.arange(len(part))
                names.append(name)
        np.save(directory / ROWS_FILE, where)
        codec.save(directory)
        info = token_vectors_info(directory, codec, builder.model_id, builder.max_length, len(inputs.chunks),
                                  tokens, names)
        return KindWritten(manifest={"token_vectors": info.to_dict()})

    def open(self, snapshot: Any) -> StoredTokenVectors | None:
        """Memory-mapped token vectors; None for a snapshot built without them."""
        info = snapshot.manifest.token_vectors
        if not info:
            return None
        parsed = TokenVectorsInfo.from_dict(info)
        return StoredTokenVectors(snapshot.paths.root / parsed.directory, parsed)

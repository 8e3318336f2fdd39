"""Chunk BM25 shards (`lucene/`): one Lucene index per partition piece, keyed by each document's id, path,
symbol and content sha. Opened as one searcher with collection-wide statistics when there are several."""

from __future__ import annotations

from typing import Any

from semantica.ondisk.snapshot_paths import LUCENE_DIR
from semantica.schema import ShardInfo
from semantica.stores.index_kinds.base import KindWritten, WriteContext
from semantica.stores.index_kinds.sharding import LUCENE_DOC_FORMAT, content_key, pieces, shard_name
from semantica.stores.lucene import LuceneDoc, LuceneShardSearcher, LuceneShardWriter
from semantica.stores.lucene_multi import LuceneMultiShardSearcher

KIND = "lucene"


class LuceneKind:
    name = KIND
    directories = (LUCENE_DIR,)

    def write(self, context: WriteContext) -> KindWritten:
        inputs, lucene = context.inputs, context.config.lucene
        shards: list[ShardInfo] = []
        for number, partition in enumerate(context.rows):
            for piece, part in enumerate(pieces(partition, lucene.shard_max_docs)):
                chunks = [inputs.chunks[int(r)] for r in part]
                key = content_key(KIND, [LUCENE_DOC_FORMAT],
                                  (f"{c.chunk_id}\x00{c.path}\x00{c.symbol}\x00{c.content_sha}" for c in chunks))
                relative = f"{LUCENE_DIR}/{shard_name(number, piece, key)}"
                if not context.linker.link(relative, KIND):
                    writer = LuceneShardWriter(context.root / relative, lucene)
                    writer.add(LuceneDoc(c.chunk_id, c.content, c.path, c.symbol) for c in chunks)
                    writer.close()
                shards.append(ShardInfo(KIND, relative, len(chunks), ""))
        return KindWritten(shards)

    def open(self, snapshot: Any) -> list[LuceneShardSearcher | LuceneMultiShardSearcher]:
        """One searcher: the shard's own, or one over all shards with collection-wide BM25 statistics
        (per-shard idf would rank a sharded snapshot differently from an unsharded one)."""
        paths = snapshot.shard_paths(KIND)
        if len(paths) > 1:
            return [LuceneMultiShardSearcher(paths, snapshot.config.lucene)]
        return [LuceneShardSearcher(p, snapshot.config.lucene) for p in paths]

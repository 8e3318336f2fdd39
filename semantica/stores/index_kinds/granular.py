"""Whole-file and function BM25 shards (`lucene_file/`, `lucene_function/`; `granular.index`), partitioned
by the same path hash as the chunks and keyed by each document's id, path, symbol and text."""

from __future__ import annotations

from typing import Any

from semantica.schema import ShardInfo
from semantica.stores.granular import Granularity, snapshot_documents
from semantica.stores.index_kinds.base import KindWritten, WriteContext
from semantica.stores.index_kinds.sharding import LUCENE_DOC_FORMAT, content_key, partition_of, shard_name
from semantica.stores.lucene import LuceneDoc, LuceneShardSearcher, LuceneShardWriter, raw_document

KIND = "granular"


class GranularKind:
    name = KIND
    directories = tuple(g.directory for g in Granularity)

    def write(self, context: WriteContext) -> KindWritten:
        shards = self._shards(context) if context.config.granular.index else []
        counts = {f"{g.shard_kind}_docs": sum(s.count for s in shards if s.kind == g.shard_kind) for g in Granularity}
        return KindWritten(shards, counts)

    def _shards(self, context: WriteContext) -> list[ShardInfo]:
        inputs, count = context.inputs, context.partitions
        by_partition: dict[Granularity, list[list[LuceneDoc]]] = {g: [[] for _ in range(count)] for g in Granularity}
        for docs in snapshot_documents(inputs.chunks, inputs.symbols):
            for granularity in Granularity:
                for doc in docs.of(granularity):
                    by_partition[granularity][partition_of(doc.path, count)].append(doc)
        shards: list[ShardInfo] = []
        size = max(1, context.config.lucene.shard_max_docs)
        for granularity, partitions in by_partition.items():
            for number, docs in enumerate(partitions):
                for piece, start in enumerate(range(0, len(docs), size)):
                    part = docs[start:start + size]
                    key = content_key(granularity.shard_kind, [LUCENE_DOC_FORMAT],
                                      (f"{d.doc_id}\x00{d.path}\x00{d.symbol}\x00{d.text}" for d in part))
                    relative = f"{granularity.directory}/{shard_name(number, piece, key)}"
                    if not context.linker.link(relative, granularity.shard_kind):
                        writer = LuceneShardWriter(context.root / relative, context.config.lucene)
                        writer.add_raw([raw_document(d) for d in part])
                        writer.close()
                    shards.append(ShardInfo(granularity.shard_kind, relative, len(part), ""))
        return shards

    def open(self, snapshot: Any) -> dict[Granularity, list[LuceneShardSearcher]]:
        return {g: [LuceneShardSearcher(p, snapshot.config.lucene) for p in snapshot.shard_paths(g.shard_kind)]
                for g in Granularity}

"""Partitioned, content-addressed shards: a new snapshot rebuilds only the partitions whose content changed.

Chunks go to `count` partitions by a hash of their path (all chunks of a file stay together; the count
is kept from the previous snapshot while its partitions stay within 2x of `shards.partition_chunks`).
Each partition is written as FAISS, Lucene and token shards, and files as whole-file and function
documents, each named `p<partition>s<piece>-<key>`. The key is a sha256 over what the shard is built
from:
- FAISS: the encoder, the index settings and the vectors' bytes;
- Lucene: each document's id, path, symbol and content sha (the raw document is a function of these);
- granular Lucene: each document's id, path, symbol and text;
- token vectors: the codec and each chunk's content sha and token count.
A shard of the same name in the previous snapshot therefore holds exactly these bytes and is hard-linked
instead of rebuilt. A snapshot stays self-contained and immutable (links, not references: pruning the
old snapshot leaves the linked files), and its checksums for linked files are the previous manifest's.
FAISS row ids (chunk rows of this snapshot) and `tokens/rows.npy` are always written: rows move when
another partition grows.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pipelines.granular import snapshot_documents
from pipelines.token_cache import TokenVectorBuilder
from semantica.config import Config, ShardsConfig
from semantica.granular import Granularity
from semantica.layout import LUCENE_DIR, TOKENS_DIR, VECTORS_DIR, SnapshotPaths
from semantica.lucene import LuceneDoc, LuceneShardWriter, raw_document
from semantica.schema import SCHEMA_VERSION, Chunk, ShardInfo, Symbol
from semantica.token_vectors import ROWS_FILE, token_vectors_info, write_token_part
from semantica.vectors import VectorShardPaths, write_shard

log = logging.getLogger(__name__)

PARTITIONS_STAT = "partitions"  # manifest.stats key: the partition count, kept by the next build
REUSE_STAT = "shard_reuse"  # manifest.stats key: shards linked and written per kind
KEY_CHARS = 20
LUCENE_DOC_FORMAT = "1"  # bump when `raw_document` or the code tokenizer changes what a document holds
TOKENS_KIND = "tokens"


def partition_of(path: str, count: int) -> int:
    """The partition of a file: stable across snapshots, branches and machines."""
    digest = hashlib.blake2b(path.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % max(1, count)


def partition_count(total: int, config: ShardsConfig, previous: int = 0) -> int:
    """How many partitions `total` chunks get: the previous count while each holds within 2x of the
    target (so the next build can reuse its shards), else total/target, at most `max_partitions`."""
    target = max(1, config.partition_chunks)
    cap = max(1, config.max_partitions)
    if 0 < previous <= cap and previous * target / 2 <= total <= previous * target * 2:
        return previous
    return max(1, min(cap, math.ceil(total / target)))


def partition_rows(paths: Sequence[str], count: int) -> list[np.ndarray]:
    """Row numbers (ascending) of each partition's items, given each item's path."""
    known: dict[str, int] = {}
    assigned = np.empty(len(paths), dtype=np.int64)
    for row, path in enumerate(paths):
        number = known.get(path)
        if number is None:
            number = known[path] = partition_of(path, count)
        assigned[row] = number
    return [np.flatnonzero(assigned == number) for number in range(count)]


def pieces(rows: np.ndarray, size: int) -> list[np.ndarray]:
    """A partition's rows cut into shards of at most `size` (a partition over the shard cap)."""
    step = max(1, size)
    return [rows[start:start + step] for start in range(0, len(rows), step)]


def shard_name(partition: int, piece: int, key: str) -> str:
    return f"p{partition:03d}s{piece:02d}-{key[:KEY_CHARS]}"


def content_key(kind: str, header: Iterable[str], items: Iterable[bytes | str]) -> str:
    """sha256 over a shard's kind, its settings and what it is built from, in order."""
    digest = hashlib.sha256(f"{kind}\x00{SCHEMA_VERSION}\x00".encode())
    for part in header:
        digest.update(part.encode("utf-8", "surrogatepass") + b"\x00")
    for item in items:
        digest.update(item if isinstance(item, bytes) else item.encode("utf-8", "surrogatepass"))
        digest.update(b"\x01")
    return digest.hexdigest()


@dataclass
class PreviousShards:
    """The published snapshot this build may link from (the same repository and branch)."""

    root: Path | None = None
    checksums: dict[str, str] = field(default_factory=dict)
    partitions: int = 0

    @staticmethod
    def of(paths: SnapshotPaths | None) -> PreviousShards:
        """Its manifest's checksums and partition count; nothing (build everything) when unreadable."""
        if paths is None:
            return PreviousShards()
        try:
            manifest = paths.read_manifest()
        except Exception:  # a broken previous snapshot: this build writes every shard
            log.warning("previous snapshot %s is unreadable; writing every shard", paths.root, exc_info=True)
            return PreviousShards()
        return PreviousShards(paths.root, dict(manifest.checksums), int(manifest.stats.get(PARTITIONS_STAT, 0) or 0))


@dataclass
class ShardReuse:
    """Shards hard-linked from the previous snapshot and shards written, per kind (for stats and tests)."""

    linked: dict[str, int] = field(default_factory=dict)
    written: dict[str, int] = field(default_factory=dict)

    def count(self, kind: str, linked: bool) -> None:
        counts = self.linked if linked else self.written
        counts[kind] = counts.get(kind, 0) + 1

    def to_dict(self) -> dict[str, Any]:
        return {"linked": dict(self.linked), "written": dict(self.written)}


class ShardLinker:
    """Hard-links a shard (a file, or a directory of files) from the previous snapshot when it has one
    of the same name; records the linked files' checksums so nobody hashes them again."""

    def __init__(self, previous: PreviousShards, target: Path, enabled: bool = True) -> None:
        self.previous = previous
        self.target = target
        self.enabled = enabled and previous.root is not None
        self.trusted: dict[str, str] = {}  # relative path -> checksum, from the previous (verified) manifest
        self.reuse = ShardReuse()

    def link(self, relative: str, kind: str) -> bool:
        """True when linked; False when the shard must be built (absent, or the link failed)."""
        linked = self._link(relative) if self.enabled else False
        self.reuse.count(kind, linked)
        return linked

    def _link(self, relative: str) -> bool:
        assert self.previous.root is not None
        source = self.previous.root / relative
        try:
            if source.is_file():
                files = [source]
            elif source.is_dir():
                files = sorted(p for p in source.rglob("*") if p.is_file())
            else:
                return False
        except OSError:  # removed while listed (the indexer pins the previous snapshot; other callers may not)
            log.info("cannot list shard %s of the previous snapshot; building it", relative, exc_info=True)
            return False
        names = [f.relative_to(self.previous.root).as_posix() for f in files]
        if not files or any(n not in self.previous.checksums for n in names):
            return False
        try:
            for file, name in zip(files, names):
                destination = self.target / name
                destination.parent.mkdir(parents=True, exist_ok=True)
                os.link(file, destination)
        except OSError:  # pruned under us, or a filesystem without hard links: build it instead
            log.info("cannot link shard %s from the previous snapshot; building it", relative, exc_info=True)
            destination = self.target / relative
            if destination.is_dir():
                shutil.rmtree(destination, ignore_errors=True)
            else:
                destination.unlink(missing_ok=True)
            return False
        for name in names:
            self.trusted[name] = self.previous.checksums[name]
        return True


@dataclass
class ShardInputs:
    """What the shards of one snapshot are built from; `vectors[i]` belongs to `chunks[i]`."""

    chunks: list[Chunk]
    vectors: np.ndarray
    symbols: list[Symbol]
    model_id: str
    token_vectors: TokenVectorBuilder | None = None


@dataclass
class ShardsWritten:
    """The manifest's shard list, its token-vector entry and the partition count."""

    shards: list[ShardInfo]
    tokens: dict[str, Any]
    partitions: int


class PartitionedShardWriter:
    """Writes a snapshot's FAISS, Lucene, granular Lucene and token shards partition by partition,
    hard-linking every shard whose content key the previous snapshot already holds."""

    def __init__(self, config: Config) -> None:
        self.config = config

    def write(self, root: Path, inputs: ShardInputs, linker: ShardLinker) -> ShardsWritten:
        count = partition_count(len(inputs.chunks), self.config.shards, linker.previous.partitions)
        rows = partition_rows([c.path for c in inputs.chunks], count)
        shards = self._vectors(root, inputs, rows, linker) + self._lucene(root, inputs, rows, linker)
        if self.config.granular.index:
            shards += self._granular(root, inputs, count, linker)
        # no chunks, no token vectors (and no codec to fit on zero vectors)
        tokens = self._tokens(root, inputs, rows, linker) if inputs.token_vectors is not None and inputs.chunks else {}
        return ShardsWritten(shards, tokens, count)

    def _vectors(self, root: Path, inputs: ShardInputs, rows: list[np.ndarray], linker: ShardLinker) -> list[ShardInfo]:
        faiss, dim = self.config.faiss, int(inputs.vectors.shape[1]) if inputs.vectors.ndim == 2 else 0
        header = [inputs.model_id, str(dim), f"{faiss.flat_max_vectors}/{faiss.ivf_nlist}/{faiss.pq_m}/{faiss.pq_bits}"]
        shards: list[ShardInfo] = []
        for number, partition in enumerate(rows):
            for piece, part in enumerate(pieces(partition, faiss.shard_max_vectors)):
                vectors = np.ascontiguousarray(inputs.vectors[part], dtype=np.float32)
                name = shard_name(number, piece, content_key("faiss", header, [vectors.tobytes()]))
                paths = VectorShardPaths.of(root / VECTORS_DIR, name)
                if linker.link(f"{VECTORS_DIR}/{paths.index.name}", "faiss"):
                    np.save(paths.ids, part.astype(np.int64))  # rows are this snapshot's
                else:
                    write_shard(paths, vectors, part, faiss)
                shards.append(ShardInfo("faiss", f"{VECTORS_DIR}/{paths.index.name}", len(part), ""))
        return shards

    def _lucene(self, root: Path, inputs: ShardInputs, rows: list[np.ndarray], linker: ShardLinker) -> list[ShardInfo]:
        shards: list[ShardInfo] = []
        for number, partition in enumerate(rows):
            for piece, part in enumerate(pieces(partition, self.config.lucene.shard_max_docs)):
                chunks = [inputs.chunks[int(r)] for r in part]
                key = content_key("lucene", [LUCENE_DOC_FORMAT],
                                  (f"{c.chunk_id}\x00{c.path}\x00{c.symbol}\x00{c.content_sha}" for c in chunks))
                relative = f"{LUCENE_DIR}/{shard_name(number, piece, key)}"
                if not linker.link(relative, "lucene"):
                    writer = LuceneShardWriter(root / relative, self.config.lucene)
                    writer.add(LuceneDoc(c.chunk_id, c.content, c.path, c.symbol) for c in chunks)
                    writer.close()
                shards.append(ShardInfo("lucene", relative, len(chunks), ""))
        return shards

    def _granular(self, root: Path, inputs: ShardInputs, count: int, linker: ShardLinker) -> list[ShardInfo]:
        """Whole-file and function documents (`granular.index`), partitioned by the same path hash."""
        by_partition: dict[Granularity, list[list[LuceneDoc]]] = {g: [[] for _ in range(count)] for g in Granularity}
        for docs in snapshot_documents(inputs.chunks, inputs.symbols):
            for granularity in Granularity:
                for doc in docs.of(granularity):
                    by_partition[granularity][partition_of(doc.path, count)].append(doc)
        shards: list[ShardInfo] = []
        size = max(1, self.config.lucene.shard_max_docs)
        for granularity, partitions in by_partition.items():
            for number, docs in enumerate(partitions):
                for piece, start in enumerate(range(0, len(docs), size)):
                    part = docs[start:start + size]
                    key = content_key(granularity.shard_kind, [LUCENE_DOC_FORMAT],
                                      (f"{d.doc_id}\x00{d.path}\x00{d.symbol}\x00{d.text}" for d in part))
                    relative = f"{granularity.directory}/{shard_name(number, piece, key)}"
                    if not linker.link(relative, granularity.shard_kind):
                        writer = LuceneShardWriter(root / relative, self.config.lucene)
                        writer.add_raw([raw_document(d) for d in part])
                        writer.close()
                    shards.append(ShardInfo(granularity.shard_kind, relative, len(part), ""))
        return shards

    def _tokens(self, root: Path, inputs: ShardInputs, rows: list[np.ndarray], linker: ShardLinker) -> dict[str, Any]:
        builder = inputs.token_vectors
        assert builder is not None
        codes = builder.codes([c.content_sha for c in inputs.chunks])
        codec = builder.codec
        assert codec is not None
        directory = root / TOKENS_DIR
        directory.mkdir(parents=True, exist_ok=True)
        where = np.zeros((len(inputs.chunks), 2), dtype=np.int64)  # chunk row -> (part, row in part)
        names: list[str] = []
        tokens = 0
        for number, partition in enumerate(rows):
            for piece, part in enumerate(pieces(partition, self.config.faiss.shard_max_vectors)):
                key = content_key(TOKENS_KIND, [codec.sha, builder.model_id, str(builder.max_length)],
                                  (f"{inputs.chunks[int(r)].content_sha}:{len(codes[int(r)][0])}" for r in part))
                name = shard_name(number, piece, key)
                if not linker.link(f"{TOKENS_DIR}/{name}", TOKENS_KIND):
                    write_token_part(directory / name, codec, [codes[int(r)] for r in part])
                tokens += sum(len(codes[int(r)][0]) for r in part)
                where[part, 0] = len(names)
                where[part, 1] = np.arange(len(part))
                names.append(name)
        np.save(directory / ROWS_FILE, where)
        codec.save(directory)
        info = token_vectors_info(directory, codec, builder.model_id, builder.max_length, len(inputs.chunks),
                                  tokens, names)
        return info.to_dict()

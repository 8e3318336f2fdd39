"""Embedding stage: batch-encode chunks, never encoding the same content twice.

Vectors are cached by chunk content sha in append-only segment files under
`<cache_dir>/embeddings/<model>-<dim>/`, shared by every repository and snapshot: an unchanged
chunk (same content) is never embedded again, whichever commit or repository it comes from.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from semantica.runtime.encoder import safe_name
from semantica.schema import Chunk

SEGMENT_GLOB = "seg-*.npz"


def unread_segments(directory: Path, pattern: str, seen: set[str]) -> list[Path]:
    """The append-only segments under `directory` not read yet, oldest name first; a segment still being
    written (`.tmp`) is not one. The caller adds a name to `seen` once it has read that segment."""
    return [p for p in sorted(directory.glob(pattern)) if p.name not in seen and not p.name.endswith(".tmp")]


class EmbeddingCache:
    """Content-addressed vector store: sha -> float32 vector, loaded lazily, appended in segments."""

    def __init__(self, directory: Path, model_id: str, dim: int, max_length: int) -> None:
        # vectors differ by model and by truncation length: each pair gets its own store
        self.directory = Path(directory) / f"{safe_name(model_id)}-{dim}-len{max_length}"
        self.dim = dim
        self._rows: dict[str, int] | None = None
        self._seen: set[str] = set()  # segment file names already read
        self._matrix = np.zeros((0, dim), dtype=np.float32)
        self._lock = threading.Lock()

    def _load(self) -> dict[str, int]:
        if self._rows is None:
            self._rows = {}
            self._read_new_segments()
        return self._rows

    def _read_new_segments(self) -> None:
        """Append the segments not read yet (all of them on first use; later, other runs' and processes')."""
        assert self._rows is not None
        blocks: list[np.ndarray] = []
        total = len(self._matrix)
        for segment in unread_segments(self.directory, SEGMENT_GLOB, self._seen):
            self._seen.add(segment.name)
            try:
                with np.load(segment, allow_pickle=False) as data:
                    shas, vectors = data["shas"], data["vectors"]
            except (OSError, ValueError, KeyError):
                continue  # a torn segment from a killed run: ignore it, its vectors get recomputed
            if vectors.shape[1:] != (self.dim,):
                continue
            for offset, sha in enumerate(shas.tolist()):
                self._rows.setdefault(sha, total + offset)
            blocks.append(vectors.astype(np.float32))
            total += len(vectors)
        if blocks:
            self._matrix = np.concatenate([self._matrix, *blocks])

    def refresh(self) -> None:
        """Pick up segments written since this cache was loaded (a long-lived process: watch, sync)."""
        with self._lock:
            if self._rows is not None:
                self._read_new_segments()

    def __len__(self) -> int:
        with self._lock:
            return len(self._load())

    def get_many(self, shas: Sequence[str]) -> dict[str, np.ndarray]:
        with self._lock:
            rows = self._load()
            return {sha: self._matrix[rows[sha]] for sha in shas if sha in rows}

    def put_many(self, shas: Sequence[str], vectors: np.ndarray) -> None:
        """Persist new vectors as one segment (written to a temp name, then renamed)."""
        if not len(shas):
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        name = f"seg-{uuid.uuid4().hex}"
        tmp = self.directory / f"{name}.tmp.npz"
        np.savez(tmp, shas=np.asarray(list(shas)), vectors=vectors.astype(np.float32))
        with self._lock:
            rows = self._load()
            os.replace(tmp, self.directory / f"{name}.npz")
            self._seen.add(f"{name}.npz")
            base = len(self._matrix)
            self._matrix = np.concatenate([self._matrix, vectors.astype(np.float32)])
            for offset, sha in enumerate(shas):
                rows.setdefault(sha, base + offset)


@dataclass
class EmbedStats:
    """How many chunks were encoded now vs reused from the cache."""

    embedded: int = 0
    reused: int = 0


class TokenSink(Protocol):
    """Receives the token vectors the embedding pass computes anyway (pipelines.token_cache)."""

    def has(self, sha: str) -> bool: ...

    def add(self, shas: Sequence[str], tokens: Sequence[np.ndarray]) -> None: ...


class ChunkEmbedder:
    """Vectors for chunks in input order; only cache misses reach the encoder.

    With `encode_with_tokens` and a `token_sink`, the same forward pass also yields each chunk's
    token vectors (for stored late interaction) at no extra encoder cost.
    """

    def __init__(self, encode: Callable[[list[str]], np.ndarray], dim: int, cache: EmbeddingCache,
                 batch_size: int, segment_vectors: int,
                 encode_with_tokens: Callable[[list[str]], tuple[np.ndarray, list[np.ndarray]]] | None = None,
                 token_sink: TokenSink | None = None) -> None:
        self.encode = encode
        self.dim = dim
        self.cache = cache
        self.batch_size = batch_size
        self.segment_vectors = segment_vectors
        self.encode_with_tokens = encode_with_tokens if token_sink is not None else None
        self.token_sink = token_sink

    def _encode_batch(self, shas: list[str], texts: list[str]) -> np.ndarray:
        if self.encode_with_tokens is None or self.token_sink is None:
            return self.encode(texts)
        vectors, tokens = self.encode_with_tokens(texts)
        self.token_sink.add(shas, tokens)
        return vectors

    def embed(self, chunks: Sequence[Chunk], progress: Callable[[int], None] | None = None) -> tuple[np.ndarray, EmbedStats]:
        shas = [c.content_sha for c in chunks]
        known = self.cache.get_many(shas)
        missing: dict[str, str] = {}
        for chunk in chunks:
            if chunk.content_sha not in known and chunk.content_sha not in missing:
                missing[chunk.content_sha] = chunk.embedding_text()
        if progress:
            progress(len(chunks) - len(missing))
        miss_shas = sorted(missing, key=lambda sha: len(missing[sha]))  # similar lengths batch with less padding
        pending: list[str] = []
        for start in range(0, len(miss_shas), self.batch_size):
            batch = miss_shas[start : start + self.batch_size]
            vectors = self._encode_batch(batch, [missing[s] for s in batch])
            known.update(zip(batch, vectors))
            pending.extend(batch)
            if len(pending) >= self.segment_vectors:
                self.cache.put_many(pending, np.stack([known[s] for s in pending]))
                pending = []
            if progress:
                progress(len(batch))
        if pending:
            self.cache.put_many(pending, np.stack([known[s] for s in pending]))
        matrix = np.zeros((len(chunks), self.dim), dtype=np.float32)
        for row, sha in enumerate(shas):
            matrix[row] = known[sha]
        stats = EmbedStats(embedded=len(missing), reused=len(chunks) - len(missing))
        return matrix, stats


def embed_files(embedder: ChunkEmbedder, files: Sequence[Sequence[Chunk]],
                progress: Callable[[int], None] | None = None) -> list[tuple[np.ndarray, int]]:
    """Per file: its chunks' vectors and how many of its chunk contents were encoded now (first seen).

    One `embed` call for all files, so batches fill across file boundaries; a content shared by two
    files is counted as embedded once, for the first.
    """
    chunks = [chunk for file in files for chunk in file]
    seen = set(embedder.cache.get_many([c.content_sha for c in chunks]))
    vectors, _ = embedder.embed(chunks, progress) if chunks else (np.zeros((0, embedder.dim), np.float32), None)
    out: list[tuple[np.ndarray, int]] = []
    offset = 0
    for file in files:
        new = {c.content_sha for c in file} - seen
        seen |= new
        out.append((vectors[offset : offset + len(file)], len(new)))
        offset += len(file)
    return out

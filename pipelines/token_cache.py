"""Token-vector stage: compressed per-chunk token vectors, content-addressed so no chunk is encoded twice.

`TokenVectorBuilder` receives token vectors (from the embedding pass, which already computes them,
or from its own pass for chunks whose sentence vector was cached), compresses them with the
model's shared projection and keeps them in `TokenCodeCache`:

```
<cache_dir>/token_vectors/<model>-len<L>-<codec>/projection.npy | pq.faiss   fitted on the first index
<cache_dir>/token_vectors/<model>-len<L>-<codec>/<codec sha>/seg-*/{shas,offsets,codes,scales}.npy
```
Segments are memory-mapped when read, so a snapshot is assembled without loading the cache.
"""

from __future__ import annotations

import os
import shutil
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from pipelines.embed import unread_segments
from semantica.config import Config, TokenVectorsConfig
from semantica.runtime.encoder import safe_name
from semantica.schema import Chunk
from semantica.stores.token_vectors import (
    PQ_FILE,
    PROJECTION_FILE,
    Quantization,
    TokenCodec,
    TokenProjection,
    TokenVectorsInfo,
    write_token_vectors,
)

SEGMENT_PREFIX = "seg-"
SHAS, OFFSETS, CODES, SCALES = "shas.npy", "offsets.npy", "codes.npy", "scales.npy"
Codes = tuple[np.ndarray, np.ndarray]


TOKEN_VECTORS_DIR = "token_vectors"


def new_token_builder(config: Config, model_id: str, dim: int) -> TokenVectorBuilder | None:
    """The token-vector builder of an indexing run (the driver's or a Ray worker's, both over the shared
    `<cache_dir>/token_vectors/`), unless token vectors are turned off or a separate late-interaction model is
    set (its token space is not the bi-encoder's; that reranker then encodes candidates itself)."""
    if not config.token_vectors.enabled or config.late_interaction.model_path:
        return None
    return TokenVectorBuilder(Path(config.paths.cache_dir) / TOKEN_VECTORS_DIR, model_id,
                              config.late_interaction.doc_max_length, dim, config.token_vectors)


class TokenCodeCache:
    """sha -> (codes, scales) for one projection; append-only segments, read memory-mapped."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._index: dict[str, tuple[int, int]] | None = None
        self._segments: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._seen: set[str] = set()  # segment directories already read
        self._lock = threading.Lock()

    def _load(self) -> dict[str, tuple[int, int]]:
        if self._index is None:
            self._index = {}
            self._read_new_segments()
        return self._index

    def _read_new_segments(self) -> None:
        """Index the segments not read yet (all on first use; later, those other processes wrote)."""
        assert self._index is not None
        for segment in unread_segments(self.directory, f"{SEGMENT_PREFIX}*", self._seen):
            try:
                shas = np.load(segment / SHAS).tolist()
                parts = (np.load(segment / OFFSETS), np.load(segment / CODES, mmap_mode="r"),
                         np.load(segment / SCALES, mmap_mode="r"))
            except (OSError, ValueError):
                continue  # a torn segment: its chunks are encoded again
            self._seen.add(segment.name)
            number = len(self._segments)
            self._segments.append(parts)
            for row, sha in enumerate(shas):
                self._index.setdefault(sha, (number, row))

    def refresh(self) -> None:
        """Pick up segments written since this cache was loaded (by Ray embedding workers, say)."""
        with self._lock:
            if self._index is not None:
                self._read_new_segments()

    def __contains__(self, sha: str) -> bool:
        with self._lock:
            return sha in self._load()

    def get(self, sha: str) -> Codes | None:
        with self._lock:
            where = self._load().get(sha)
            if where is None:
                return None
            offsets, codes, scales = self._segments[where[0]]
            start, end = int(offsets[where[1]]), int(offsets[where[1] + 1])
            return codes[start:end], scales[start:end]

    def put_many(self, items: dict[str, Codes]) -> None:
        """One new segment, written to a temp directory and renamed into place."""
        if not items:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        name = f"{SEGMENT_PREFIX}{uuid.uuid4().hex}"
        tmp = self.directory / f"{name}.tmp"
        tmp.mkdir()
        shas = list(items)
        lengths = [len(items[s][0]) for s in shas]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        try:
            np.save(tmp / SHAS, np.asarray(shas))
            np.save(tmp / OFFSETS, offsets)
            np.save(tmp / CODES, np.concatenate([items[s][0] for s in shas]))
            np.save(tmp / SCALES, np.concatenate([items[s][1] for s in shas]))
            os.rename(tmp, self.directory / name)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        with self._lock:
            index = self._load()
            self._seen.add(name)
            number = len(self._segments)
            self._segments.append((offsets, np.load(self.directory / name / CODES, mmap_mode="r"),
                                   np.load(self.directory / name / SCALES, mmap_mode="r")))
            for row, sha in enumerate(shas):
                index.setdefault(sha, (number, row))


class CodecFit:
    """One codec fit on a thread of its own, with `fit_threads` FAISS OpenMP threads there only (OpenMP's
    thread count is per calling thread): the fit overlaps the encoder's forward pass, and on a busy machine
    one k-means thread does not wait at every barrier for a second one to be scheduled. FAISS's k-means is
    deterministic, so the codec equals a fit on the caller's thread with FAISS's default threads."""

    def __init__(self, sample: np.ndarray, config: TokenVectorsConfig) -> None:
        self._codec: TokenCodec | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(sample, config), name="token-codec-fit", daemon=True)
        self._thread.start()

    def _run(self, sample: np.ndarray, config: TokenVectorsConfig) -> None:
        try:
            if config.fit_threads > 0 and Quantization.parse(config.quantization) is Quantization.PQ:
                import faiss

                faiss.omp_set_num_threads(config.fit_threads)
            self._codec = TokenCodec.fit(sample, config.dim, config.quantization, config.pq_m, config.fit_iterations)
        except BaseException as exc:  # raised again on the caller's thread by result()
            self._error = exc

    def done(self) -> bool:
        return not self._thread.is_alive()

    def result(self) -> TokenCodec:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._codec is not None
        return self._codec


class TokenVectorBuilder:
    """Collects token vectors by content sha, compresses them, and writes a snapshot's `tokens/`.

    The projection is fitted once per (model, length, dim, quantisation) on the first
    `fit_sample_tokens` token vectors it sees and then reused by every later snapshot, so cached
    codes stay valid; until it exists, incoming vectors wait in memory (bounded by the sample size).
    """

    def __init__(self, cache_root: Path, model_id: str, max_length: int, source_dim: int,
                 config: TokenVectorsConfig) -> None:
        self.config = config
        self.model_id = model_id
        self.max_length = max_length
        self.source_dim = source_dim
        self.quantization = Quantization.parse(config.quantization)
        codec_name = f"pq{config.pq_m}" if self.quantization is Quantization.PQ else f"d{config.dim}-{self.quantization.value}"
        self.root = cache_root / f"{safe_name(model_id)}-len{max_length}-{codec_name}"
        self.codec: TokenCodec | None = None
        if not TokenCodec.needs_fit(self.quantization, config.dim, source_dim):
            self._use(TokenCodec(TokenProjection(None, source_dim), self.quantization))
        elif (self.root / (PQ_FILE if self.quantization is Quantization.PQ else PROJECTION_FILE)).exists():
            self._use(TokenCodec.load(self.root, source_dim, self.quantization))
        self._raw: dict[str, np.ndarray] = {}
        self._raw_tokens = 0
        self._pending: dict[str, Codes] = {}
        self._fitting: CodecFit | None = None
        self.encoded = 0

    def _use(self, codec: TokenCodec) -> None:
        self.codec = codec
        self.cache = TokenCodeCache(self.root / codec.sha)

    def _start_fit(self) -> None:
        """Fit the codec on the first `fit_sample_tokens` tokens seen, on its own thread: `add` goes on keeping
        raw vectors until it is done (`fit_background`), else this waits for it."""
        sample = np.concatenate(list(self._raw.values())) if self._raw else np.zeros((0, self.source_dim), np.float32)
        self._fitting = CodecFit(sample[: self.config.fit_sample_tokens], self.config)
        if not self.config.fit_background:
            self._adopt_fit(wait=True)

    def _adopt_fit(self, wait: bool) -> None:
        """Once the fit is done: save the codec, use it, and compress every raw vector kept meanwhile."""
        if self._fitting is None or not (wait or self._fitting.done()):
            return
        codec, self._fitting = self._fitting.result(), None
        self.root.mkdir(parents=True, exist_ok=True)
        staging = self.root / f".fit-{uuid.uuid4().hex}"
        staging.mkdir()
        codec.save(staging)
        for written in staging.iterdir():  # each file replaced atomically; a concurrent fit only wins whole files
            os.replace(written, self.root / written.name)
        staging.rmdir()
        self._use(codec)
        raw, self._raw, self._raw_tokens = self._raw, {}, 0
        self._pending.update(zip(raw, codec.encode_many(list(raw.values()))))

    def _fit(self) -> None:
        """The codec, now: fitted on what was kept (a small corpus), or the running fit waited for."""
        if self._fitting is None:
            self._start_fit()
        self._adopt_fit(wait=True)

    def refresh(self) -> None:
        """See the codes other processes (Ray embedding workers) wrote into the shared cache since."""
        if self.codec is not None:
            self.cache.refresh()

    def sample_for_codec(self, chunks: Sequence[Chunk], encode_tokens: Callable[[list[str]], list[np.ndarray]],
                         batch_size: int) -> None:
        """Encode `chunks` in order until the codec is fitted (`fit_sample_tokens` reached): a sample that lets
        the codec exist before the Ray workers start, since they compress with it from the shared cache."""
        for start in range(0, len(chunks), batch_size):
            if self.codec is not None or self._fitting is not None:
                return
            batch = [c for c in chunks[start : start + batch_size] if not self.has(c.content_sha)]
            if batch:
                self.add([c.content_sha for c in batch], encode_tokens([c.embedding_text() for c in batch]))

    def fit_now(self) -> None:
        """Fit the codec on what was sampled (fewer tokens than `fit_sample_tokens`: a small corpus), and write
        the sampled codes into the shared cache so that nobody encodes those chunks again."""
        if self.codec is None and self._raw:
            self._fit()
        if self.codec is not None:
            self.flush()

    def has(self, sha: str) -> bool:
        return sha in self._raw or sha in self._pending or (self.codec is not None and sha in self.cache)

    def add(self, shas: Sequence[str], tokens: Sequence[np.ndarray]) -> None:
        """Full-width unit token vectors of new chunks (already-known shas are ignored)."""
        fresh: dict[str, np.ndarray] = {}
        for sha, array in zip(shas, tokens):
            if not self.has(sha) and sha not in fresh:
                fresh[sha] = array
        self.encoded += len(fresh)
        if self.codec is None:
            for sha, array in fresh.items():
                self._raw[sha] = np.asarray(array, dtype=np.float32)
                self._raw_tokens += len(array)
        else:  # one compression pass for the whole batch
            self._pending.update(zip(fresh, self.codec.encode_many(list(fresh.values()))))
        if self.codec is None and self._fitting is None and self._raw_tokens >= self.config.fit_sample_tokens:
            self._start_fit()
        self._adopt_fit(wait=False)
        if len(self._pending) >= self.config.cache_segment_chunks:
            self.flush()

    def flush(self) -> None:
        if self.codec is None:
            self._fit()
        self.cache.put_many(self._pending)
        self._pending = {}

    def fill(self, chunks: Sequence[Chunk], encode_tokens: Callable[[list[str]], list[np.ndarray]],
             batch_size: int, progress: Callable[[int], None] | None = None) -> int:
        """Encode the chunks nobody has token vectors for yet (length-sorted batches); returns how many."""
        missing: dict[str, str] = {}
        for chunk in chunks:
            if chunk.content_sha not in missing and not self.has(chunk.content_sha):
                missing[chunk.content_sha] = chunk.embedding_text()
        order = sorted(missing, key=lambda sha: len(missing[sha]))
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            self.add(batch, encode_tokens([missing[s] for s in batch]))
            if progress:
                progress(len(batch))
        return len(missing)

    def codes(self, shas: Sequence[str]) -> list[Codes]:
        """(codes, scales) of each sha, empty for one nobody encoded; pending vectors are flushed first."""
        self.flush()
        assert self.codec is not None
        empty: Codes = (np.zeros((0, self.codec.code_width), self.codec.code_dtype), np.zeros(0, np.float16))
        return [self.cache.get(sha) or empty for sha in shas]

    def write(self, directory: Path, shas: Sequence[str]) -> TokenVectorsInfo:
        """The snapshot's token files as one set, rows in `shas` order (the chunk order of chunks.parquet);
        the indexer writes them per partition instead (`pipelines.shards`)."""
        parts = self.codes(shas)
        assert self.codec is not None
        return write_token_vectors(directory, self.codec, parts, self.model_id, self.max_length)

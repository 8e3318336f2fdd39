"""Document token vectors for late interaction: compressed at index time, memory-mapped at query time.

Each chunk's token vectors (the encoder's L2-normalised token outputs, the ones the on-the-fly
reranker computes) are projected to `dim` dimensions by an uncentred PCA (the top eigenvectors of
E[x x^T], which best preserves inner products: q.P P^T.d ~ q.d; not re-normalised, which would
inflate every cosine towards the shared dominant direction), and stored as int8 codes with one
float16 scale per token (or as float16). A snapshot holds them in `tokens/`:

```
tokens/codes.npy       (total_tokens, dim) int8 | float16   all chunks' tokens, chunk after chunk
tokens/scales.npy      (total_tokens,) float16              code * scale = the projected unit vector
tokens/offsets.npy     (chunks + 1,) int64                  chunk row r owns codes[offsets[r]:offsets[r+1]]
tokens/projection.npy  (encoder_dim, dim) float32           absent when dim = encoder width
```
A partitioned snapshot (`pipelines.shards`) keeps codes, scales and offsets per partition instead, in
`tokens/<part>/`, so an unchanged partition is hard-linked from the previous snapshot, plus
`tokens/rows.npy` ((chunks, 2) int64: chunk row -> part number, row within the part);
and the manifest's `token_vectors` entry records model, lengths, dims, quantisation and the
projection's sha (the checksums cover the files). MaxSim then costs one small matrix product.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from semantica.schema import ParsableEnum

TOKENS_DIR = "tokens"
CODES_FILE = "codes.npy"
SCALES_FILE = "scales.npy"
OFFSETS_FILE = "offsets.npy"
ROWS_FILE = "rows.npy"
PROJECTION_FILE = "projection.npy"
PQ_FILE = "pq.faiss"
PQ_BITS = 8  # one byte per sub-vector code
PQ_FIT_ITERATIONS = 25  # FAISS's default k-means rounds (token_vectors.fit_iterations)
INT8_MAX = 127.0
_EPS = 1e-12


_BLAS: list[Any] = []


def single_thread_blas() -> Any:
    """A context with one BLAS thread: query-time products are small, and on a loaded machine
    OpenBLAS threads made a 256x384x64 product 30x slower (measured: 88 ms vs 2.8 ms)."""
    if not _BLAS:
        from threadpoolctl import ThreadpoolController

        _BLAS.append(ThreadpoolController())
    return _BLAS[0].limit(limits=1, user_api="blas")


class Quantization(ParsableEnum):
    """How projected token vectors are stored."""

    INT8 = "int8"
    FLOAT16 = "float16"
    PQ = "pq"  # FAISS product quantiser over all dims: pq_m bytes per token, trained on the first index


class TokenVectorError(RuntimeError):
    """Stored token vectors are missing, inconsistent or from another model."""


class TokenProjection:
    """A linear map encoder_dim -> dim (None = identity), fitted once and shared by every snapshot."""

    def __init__(self, matrix: np.ndarray | None, source_dim: int) -> None:
        self.matrix = None if matrix is None else np.ascontiguousarray(matrix, dtype=np.float32)
        self.source_dim = source_dim
        self.dim = source_dim if matrix is None else int(matrix.shape[1])

    @staticmethod
    def fit(sample: np.ndarray, dim: int) -> TokenProjection:
        """Uncentred PCA of `sample` (n, source_dim); `dim` 0 or >= source_dim keeps the identity."""
        source_dim = int(sample.shape[1])
        if dim <= 0 or dim >= source_dim:
            return TokenProjection(None, source_dim)
        if len(sample) == 0:
            raise TokenVectorError("cannot fit a token projection on zero token vectors")
        second_moment = sample.astype(np.float64).T @ sample.astype(np.float64)
        _, vectors = np.linalg.eigh(second_moment)  # ascending eigenvalues
        top = vectors[:, ::-1][:, :dim]
        signs = np.sign(top[np.abs(top).argmax(axis=0), np.arange(dim)])  # deterministic sign
        return TokenProjection((top * signs).astype(np.float32), source_dim)

    @property
    def sha(self) -> str:
        if self.matrix is None:
            return f"identity-{self.source_dim}"
        return hashlib.sha256(self.matrix.tobytes()).hexdigest()[:16]

    def apply(self, tokens: np.ndarray) -> np.ndarray:
        """Project (n, source_dim) unit vectors -> (n, dim), float32, norms <= 1 (inner products kept)."""
        tokens = np.asarray(tokens, dtype=np.float32)
        if tokens.shape[-1] != self.source_dim:
            raise TokenVectorError(f"token vectors have width {tokens.shape[-1]}, the projection expects {self.source_dim}")
        return tokens if self.matrix is None else tokens @ self.matrix

    def save(self, path: Path) -> None:
        if self.matrix is not None:
            np.save(path, self.matrix)

    @staticmethod
    def load(path: Path, source_dim: int) -> TokenProjection:
        return TokenProjection(np.load(path) if path.exists() else None, source_dim)


class TokenCodec:
    """Projection + quantisation: full token vectors -> (codes, scales) and back into vectors."""

    def __init__(self, projection: TokenProjection, quantization: Quantization | str, pq: Any = None) -> None:
        self.projection = projection
        self.quantization = Quantization.parse(quantization)
        self.pq = pq
        if self.quantization is Quantization.PQ and (pq is None or projection.matrix is not None):
            raise TokenVectorError("pq quantisation needs a trained product quantiser over unprojected vectors")

    @staticmethod
    def needs_fit(quantization: Quantization | str, dim: int, source_dim: int) -> bool:
        return Quantization.parse(quantization) is Quantization.PQ or 0 < dim < source_dim

    @staticmethod
    def fit(sample: np.ndarray, dim: int, quantization: Quantization | str, pq_m: int,
            iterations: int = PQ_FIT_ITERATIONS, threads: int = 0) -> TokenCodec:
        """PCA projection (int8/float16) or a product quantiser (pq) trained on `sample` (`iterations` k-means
        rounds per sub-space, on `threads` FAISS OpenMP threads; 0: FAISS's own setting)."""
        quantization = Quantization.parse(quantization)
        source_dim = int(sample.shape[1])
        if quantization is not Quantization.PQ:
            return TokenCodec(TokenProjection.fit(sample, dim), quantization)
        import faiss

        if pq_m <= 0 or source_dim % pq_m:
            raise TokenVectorError(f"token_vectors.pq_m={pq_m} must divide the encoder width {source_dim}")
        if len(sample) == 0:
            raise TokenVectorError("cannot train a product quantiser on zero token vectors")
        rows = max(len(sample), 1 << PQ_BITS)  # a tiny first repository: repeat its tokens up to one per centroid
        training = np.ascontiguousarray(np.resize(sample.astype(np.float32), (rows, source_dim)))
        pq = faiss.ProductQuantizer(source_dim, pq_m, PQ_BITS)
        pq.cp.niter = max(1, iterations)
        from semantica.stores.pq_subspaces import train_subspaces  # imports faiss: deferred with it
        from semantica.stores.vectors import omp_threads

        with omp_threads(threads):
            train_subspaces(pq, training)
        return TokenCodec(TokenProjection(None, source_dim), quantization, pq)

    def save(self, directory: Path) -> None:
        self.projection.save(directory / PROJECTION_FILE)
        if self.pq is not None:
            import faiss

            faiss.write_ProductQuantizer(self.pq, str(directory / PQ_FILE))

    @staticmethod
    def load(directory: Path, source_dim: int, quantization: Quantization | str) -> TokenCodec:
        pq = None
        if Quantization.parse(quantization) is Quantization.PQ:
            import faiss

            if not (directory / PQ_FILE).exists():
                raise TokenVectorError(f"{directory / PQ_FILE} is missing")
            pq = faiss.read_ProductQuantizer(str(directory / PQ_FILE))
        return TokenCodec(TokenProjection.load(directory / PROJECTION_FILE, source_dim), quantization, pq)

    @property
    def sha(self) -> str:
        if self.pq is None:
            return self.projection.sha
        import faiss

        return "pq-" + hashlib.sha256(faiss.vector_to_array(self.pq.centroids).tobytes()).hexdigest()[:16]

    @property
    def code_dtype(self) -> np.dtype:
        return np.dtype({Quantization.INT8: np.int8, Quantization.FLOAT16: np.float16,
                         Quantization.PQ: np.uint8}[self.quantization])

    @property
    def code_width(self) -> int:
        return int(self.pq.M) if self.pq is not None else self.projection.dim

    def encode(self, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(n, source_dim) -> codes (n, code_width) and per-token scales (n,) float16."""
        projected = self.projection.apply(tokens)
        ones = np.ones(len(projected), dtype=np.float16)
        if self.quantization is Quantization.FLOAT16:
            return projected.astype(np.float16), ones
        if self.quantization is Quantization.PQ:
            return self._pq_codes(projected), ones
        amax = np.abs(projected).max(axis=1) if len(projected) else np.zeros(0, dtype=np.float32)
        scales = np.clip(amax, _EPS, None) / INT8_MAX
        codes = np.clip(np.rint(projected / scales[:, None]), -INT8_MAX, INT8_MAX).astype(np.int8)
        return codes, scales.astype(np.float16)

    def encode_many(self, arrays: Sequence[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        """`encode` of many chunks' token vectors in one pass (one call per encoder batch, not per chunk)."""
        if not arrays:
            return []
        codes, scales = self.encode(np.concatenate([np.asarray(a, dtype=np.float32) for a in arrays]))
        bounds = np.cumsum([0] + [len(a) for a in arrays])
        return [(codes[a:b], scales[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]

    def _pq_codes(self, vectors: np.ndarray) -> np.ndarray:
        """The nearest centroid of each sub-vector, as FAISS's `compute_codes` gives it (`SubspaceAssigner`: FAISS's
        own runs 6-d sub-spaces ten times slower)."""
        if not hasattr(self, "_assigner"):
            from semantica.stores.pq_subspaces import SubspaceAssigner  # imports faiss: deferred with it

            self._assigner = SubspaceAssigner(self.pq)
        return self._assigner.codes(vectors)

    def decode(self, codes: np.ndarray, scales: np.ndarray) -> np.ndarray:
        """Codes -> (n, projection.dim) float32 vectors (what MaxSim multiplies with the projected query)."""
        if self.pq is not None:
            return self.pq.decode(np.ascontiguousarray(codes, dtype=np.uint8))
        return np.asarray(codes, dtype=np.float32) * np.asarray(scales, dtype=np.float32)[:, None]

    def bytes_per_token(self) -> int:
        return self.code_width * self.code_dtype.itemsize + np.dtype(np.float16).itemsize


@dataclass
class TokenVectorsInfo:
    """The manifest's `token_vectors` entry: enough to refuse vectors from another model."""

    directory: str
    model_id: str
    max_length: int
    source_dim: int
    dim: int
    quantization: str
    projection_sha: str  # the codec's sha: the PCA projection's, or the product quantiser's ("pq-...")
    chunks: int
    tokens: int
    bytes: int
    code_width: int = 0  # columns of codes.npy (dim, or pq_m for pq); 0 = dim
    parts: list[str] = field(default_factory=list)  # partition directories under `directory`; [] = one flat set

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @staticmethod
    def from_dict(values: dict[str, object]) -> TokenVectorsInfo:
        return TokenVectorsInfo(**values)  # type: ignore[arg-type]


def write_token_part(directory: Path, codec: TokenCodec, parts: Sequence[tuple[np.ndarray, np.ndarray]]) -> int:
    """codes, scales and offsets of `parts` (chunk after chunk) into `directory`; returns the token count."""
    directory.mkdir(parents=True, exist_ok=True)
    lengths = np.array([len(codes) for codes, _ in parts], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    total = int(offsets[-1])
    write_npy_rows(directory / CODES_FILE, np.dtype(codec.code_dtype), (total, codec.code_width),
                   (codes for codes, _ in parts))
    write_npy_rows(directory / SCALES_FILE, np.dtype(np.float16), (total,), (scales for _, scales in parts))
    np.save(directory / OFFSETS_FILE, offsets)
    return total


def write_npy_rows(path: Path, dtype: np.dtype, shape: tuple[int, ...], blocks: Iterable[np.ndarray]) -> None:
    """One `.npy` file of `shape` from `blocks` of rows, written block after block (memory stays flat). Plain
    writes, not a memory map: a full disk is then an ENOSPC OSError, where a store into a mapped page of a full
    tmpfs kills the process with SIGBUS."""
    with open(path, "wb") as handle:
        np.lib.format.write_array_header_1_0(
            handle, {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": shape})
        for block in blocks:
            handle.write(np.ascontiguousarray(block, dtype=dtype).tobytes())


def token_vectors_info(directory: Path, codec: TokenCodec, model_id: str, max_length: int, chunks: int,
                       tokens: int, parts: list[str] | None = None) -> TokenVectorsInfo:
    """The manifest entry of a written `tokens/` directory (its bytes counted over every part)."""
    size = sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())
    return TokenVectorsInfo(
        directory=directory.name, model_id=model_id, max_length=max_length, source_dim=codec.projection.source_dim,
        dim=codec.projection.dim, quantization=codec.quantization.value, projection_sha=codec.sha,
        chunks=chunks, tokens=tokens, bytes=size, code_width=codec.code_width, parts=list(parts or []),
    )


def write_token_vectors(directory: Path, codec: TokenCodec, parts: Sequence[tuple[np.ndarray, np.ndarray]],
                        model_id: str, max_length: int) -> TokenVectorsInfo:
    """Write one snapshot's token files; `parts[r]` = (codes, scales) of chunk row r (may be memmaps)."""
    total = write_token_part(directory, codec, parts)
    codec.save(directory)
    return token_vectors_info(directory, codec, model_id, max_length, len(parts), total)


class StoredTokenVectors:
    """One snapshot's token vectors, memory-mapped (pages load on first touch, shared between processes)."""

    def __init__(self, directory: Path, info: TokenVectorsInfo) -> None:
        self.info = info
        width = info.code_width or info.dim
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (offsets, codes, scales) per part
        try:
            for part in [directory / name for name in info.parts] or [directory]:
                self._parts.append((np.load(part / OFFSETS_FILE), np.load(part / CODES_FILE, mmap_mode="r"),
                                    np.load(part / SCALES_FILE, mmap_mode="r")))
            self.rows = (np.load(directory / ROWS_FILE) if info.parts else
                         np.stack([np.zeros(len(self._parts[0][0]) - 1, np.int64),
                                   np.arange(len(self._parts[0][0]) - 1, dtype=np.int64)], axis=1))
        except (OSError, ValueError) as exc:
            raise TokenVectorError(f"cannot read token vectors in {directory}: {exc}") from exc
        self.codec = TokenCodec.load(directory, info.source_dim, info.quantization)
        self.projection = self.codec.projection
        tokens = sum(len(codes) for _, codes, _ in self._parts)
        consistent = all(offsets[-1] == len(codes) and codes.shape[1:] == (width,) for offsets, codes, _ in self._parts)
        if len(self.rows) != info.chunks or tokens != info.tokens or not consistent:
            raise TokenVectorError(f"token vectors in {directory} do not match the manifest "
                                   f"({len(self.rows)} chunks, {tokens} tokens; manifest "
                                   f"{info.chunks} chunks, {info.tokens} x {width})")
        if self.codec.sha != info.projection_sha:
            raise TokenVectorError(f"{directory / PROJECTION_FILE} is not the projection the manifest names")

    def _span(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """(codes, scales) of one chunk row, from whichever part holds it."""
        part, local = (int(v) for v in self.rows[row])
        offsets, codes, scales = self._parts[part]
        start, end = int(offsets[local]), int(offsets[local + 1])
        return codes[start:end], scales[start:end]

    def compatible(self, model_id: str, max_length: int) -> bool:
        """Stored with this model and truncation (else scores would mix two embedding spaces)."""
        return self.info.model_id == model_id and self.info.max_length == max_length

    def maxsim(self, query_tokens: np.ndarray, rows: Sequence[int]) -> np.ndarray:
        """MaxSim of the query's (full-width, unit) token vectors against each chunk row; 0 for an empty chunk."""
        out = np.zeros(len(rows), dtype=np.float32)
        if len(query_tokens) == 0 or not len(rows):
            return out
        spans = [self._span(r) for r in rows]
        nonempty = [i for i, (codes, _) in enumerate(spans) if len(codes)]
        if not nonempty:
            return out
        codes = np.concatenate([spans[i][0] for i in nonempty])
        scales = np.concatenate([spans[i][1] for i in nonempty])
        starts = np.concatenate([[0], np.cumsum([len(spans[i][0]) for i in nonempty])[:-1]])
        with single_thread_blas():
            query = self.projection.apply(query_tokens)
            sims = query @ self.codec.decode(codes, scales).T
        best = np.maximum.reduceat(sims, starts, axis=1)  # (query tokens, chunks)
        out[nonempty] = best.mean(axis=0)
        return out

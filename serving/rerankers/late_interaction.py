"""Late interaction (ColBERT-style MaxSim) over the top fused hits, with a token-embedding cache.

    MaxSim(q, d) = (1 / |q|) * sum_{i in q tokens} max_{j in d tokens} cos(q_i, d_j)

For the first `top_n` hits:

    score = (1 - weight) * fused / max(fused over those hits) + weight * max(0, MaxSim)

so both terms lie in [0, 1]. The re-scored hits are sorted by that score (ties keep their fused
order); hits beyond `top_n` follow unchanged, in their original order.

Document token vectors come from the snapshot when it stores them (`semantica.stores.token_vectors`:
computed at index time, PCA-projected and int8-quantised, memory-mapped), so a query pays only
its own encoding plus one small matrix product. For a snapshot without them (built before they
existed, or with another late-interaction model) they are encoded on the fly and cached by content
sha (not for a first `index.dense_later` snapshot, whose token vectors are still building: its hits keep their
fused order): in memory (LRU, `max_items`) and on disk (one `.npy` per sha, float16 by default, written
atomically). Encoding 50 candidates x 256 tokens on CPU costs seconds. Use one cache directory per
model: the key is the content sha only.

`LateInteractionStage` is the registered reranker: it owns the model (built on first use, or in `warm_up`)
and records MaxSim in `Hit.scores["late_interaction"]`.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from semantica.config import EncoderConfig, LateInteractionConfig
from semantica.hits import Hit
from semantica.runtime.encoder import Encoder, safe_name, shared_encoder
from semantica.schema import Chunk
from semantica.stores.index_kinds.tokens import KIND as TOKENS_KIND
from semantica.stores.token_vectors import StoredTokenVectors, single_thread_blas
from serving.core.intent import identifier_only
from serving.rerankers.base import WARM_UP_TEXT, RerankInput, rescored
from serving.rerankers.registry import register_reranker

StoredLookup = Callable[[str], tuple[StoredTokenVectors, dict[str, int]] | None]
"""repo -> (its snapshot's stored token vectors, chunk id -> row), or None when it stores none."""
BuildingLookup = Callable[[str], bool]
"""repo -> whether its snapshot's token vectors are still building (`index.dense_later`): none encoded instead."""

LATE_STAGE = "late_interaction"
LATE_CACHE_DIR = "late_tokens"
"""Under `paths.cache_dir`: encoded document token vectors, one folder per model and truncation length."""

_SAFE_KEY = re.compile(r"[0-9A-Za-z_-]{1,128}")
"""One name, dotted or not (`raw_decode`, `JSONDecoder.raw_decode`): what `skip_identifier_queries` skips."""
_DTYPES = {"float16": np.float16, "float32": np.float32}


def _dtype(name: str | np.dtype | type) -> np.dtype:
    key = name if isinstance(name, str) else np.dtype(name).name
    if key not in _DTYPES:
        raise ValueError(f"late_interaction.dtype must be one of {sorted(_DTYPES)}, got {name!r}")
    return np.dtype(_DTYPES[key])


def maxsim(query_tokens: np.ndarray, doc_tokens: np.ndarray) -> float:
    """Mean over query tokens of the best cosine with any doc token (inputs are unit vectors)."""
    if query_tokens.size == 0 or doc_tokens.size == 0:
        return 0.0
    with single_thread_blas():
        sims = query_tokens.astype(np.float32) @ doc_tokens.astype(np.float32).T
    return float(sims.max(axis=1).mean())


class TokenEmbeddingCache:
    """Per-token document embeddings by content sha: an in-memory LRU over an optional disk store.

    Thread-safe. Arrays are stored in `dtype` and returned as float32. A corrupt or unreadable
    file on disk counts as a miss (and is recomputed and rewritten by the caller).
    """

    def __init__(
        self, directory: Path | str | None = None, max_items: int = 4096, dtype: str = "float16"
    ) -> None:
        if max_items < 0:
            raise ValueError(f"max_items must be >= 0, got {max_items}")
        self.directory = Path(directory) if directory else None
        self.max_items = max_items
        self.dtype = _dtype(dtype)
        self._memory: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        if self.directory:
            self.directory.mkdir(parents=True, exist_ok=True)

    def _file(self, sha: str) -> Path | None:
        if self.directory is None:
            return None
        if not _SAFE_KEY.fullmatch(sha):
            raise ValueError(f"cache key must be a hex sha (letters, digits, _ or -), got {sha!r}")
        return self.directory / sha[:2] / f"{sha}.npy"

    def _remember(self, sha: str, array: np.ndarray) -> None:
        if self.max_items == 0:
            return
        with self._lock:
            self._memory[sha] = array
            self._memory.move_to_end(sha)
            while len(self._memory) > self.max_items:
                self._memory.popitem(last=False)

    def get(self, sha: str) -> np.ndarray | None:
        """The cached (n_tokens, dim) float32 array, or None."""
        with self._lock:
            array = self._memory.get(sha)
            if array is not None:
                self._memory.move_to_end(sha)
                return array.astype(np.float32)
        path = self._file(sha)
        if path is None or not path.exists():
            return None
        try:
            array = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError):
            return None
        if array.ndim != 2:
            return None
        array = array.astype(self.dtype, copy=False)
        self._remember(sha, array)
        return array.astype(np.float32)

    def put(self, sha: str, array: np.ndarray) -> None:
        """Store in memory and (atomically: temp file + os.replace) on disk."""
        array = np.asarray(array)
        if array.ndim != 2:
            raise ValueError(f"token embeddings must be 2-D (n_tokens, dim), got shape {array.shape}")
        stored = np.ascontiguousarray(array.astype(self.dtype))
        path = self._file(sha)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{sha}.", suffix=".tmp", dir=path.parent)
            try:
                with os.fdopen(fd, "wb") as handle:
                    np.save(handle, stored, allow_pickle=False)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        self._remember(sha, stored)

    def __contains__(self, sha: str) -> bool:
        with self._lock:
            if sha in self._memory:
                return True
        path = self._file(sha)
        return bool(path and path.exists())

    def __len__(self) -> int:
        """Items held in memory."""
        with self._lock:
            return len(self._memory)


class LateInteractionReranker:
    """`rerank(query, hits, chunks)` -> hits, the first `top_n` re-scored by MaxSim.

    Encoder choice: when `config.model_path` is set, that checkpoint (e.g. a ColBERT model in
    transformers format) is loaded and used, whatever encoder is passed; otherwise the passed
    encoder is used, and without one the default shared bi-encoder.
    """

    def __init__(
        self,
        config: LateInteractionConfig | None = None,
        encoder: Encoder | None = None,
        cache: TokenEmbeddingCache | None = None,
        stored: StoredLookup | None = None,
        query_tokens: Callable[[str], np.ndarray] | None = None,
        building: BuildingLookup | None = None,
    ) -> None:
        self.config = config or LateInteractionConfig()
        c = self.config
        if c.top_n < 0:
            raise ValueError(f"late_interaction.top_n must be >= 0, got {c.top_n}")
        if not 0.0 <= c.weight <= 1.0:
            raise ValueError(f"late_interaction.weight must be in [0, 1], got {c.weight}")
        if c.model_path:
            encoder = shared_encoder(
                EncoderConfig(model_path=c.model_path, model_id=Path(c.model_path).name)
            )
        self.encoder = encoder if encoder is not None else shared_encoder(EncoderConfig())
        self.cache = cache if cache is not None else TokenEmbeddingCache(
            None, c.memory_cache_items, c.dtype
        )
        self.stored = stored if not c.model_path else None  # stored vectors are the bi-encoder's tokens
        self._query_tokens = query_tokens
        self.building = building

    def query_tokens(self, query: str) -> np.ndarray:
        if self._query_tokens is not None:
            return self._query_tokens(query)
        return self.encoder.encode_tokens([query or ""], self.encoder.config.query_max_length)[0]

    def _stored_rows(self, chunks: Iterable[Chunk]) -> dict[str, tuple[StoredTokenVectors, int]]:
        """chunk id -> (store, row) for chunks whose snapshot stores compatible token vectors."""
        out: dict[str, tuple[StoredTokenVectors, int]] = {}
        if self.stored is None:
            return out
        lookups: dict[str, tuple[StoredTokenVectors, dict[str, int]] | None] = {}
        for chunk in chunks:
            if chunk.repo not in lookups:
                found = self.stored(chunk.repo)
                usable = found is not None and found[0].compatible(self.encoder.model_id, self.config.doc_max_length)
                lookups[chunk.repo] = found if usable else None
            found = lookups[chunk.repo]
            if found is not None and chunk.chunk_id in found[1]:
                out[chunk.chunk_id] = (found[0], found[1][chunk.chunk_id])
        return out

    def _late_scores(self, query: str, chunks: list[Chunk]) -> tuple[dict[str, float], set[str]]:
        """MaxSim by chunk id; the second value names the chunks scored from stored vectors."""
        query_tokens = self.query_tokens(query)
        stored = self._stored_rows(chunks)
        scores: dict[str, float] = {}
        by_store: dict[int, tuple[StoredTokenVectors, list[str]]] = {}
        for chunk_id, (store, _) in stored.items():
            by_store.setdefault(id(store), (store, []))[1].append(chunk_id)
        for store, chunk_ids in by_store.values():
            values = store.maxsim(query_tokens, [stored[cid][1] for cid in chunk_ids])
            scores.update(zip(chunk_ids, values.tolist()))
        building = self.building_repos(c.repo for c in chunks if c.chunk_id not in stored)
        rest = [c for c in chunks if c.chunk_id not in stored and c.repo not in building]
        if rest:
            doc_tokens = self.document_tokens(rest)
            for chunk in rest:
                scores[chunk.chunk_id] = maxsim(query_tokens, doc_tokens[chunk.content_sha])
        return scores, set(stored)

    def building_repos(self, repos: Iterable[str]) -> set[str]:
        """Those of `repos` whose token vectors are still building: their chunks are scored from stored vectors
        only (a chunk with none gets no late score)."""
        return set() if self.building is None else {repo for repo in set(repos) if self.building(repo)}

    # -- document embeddings --------------------------------------------------------------------

    def _doc_text(self, chunk: Chunk) -> str:
        return chunk.embedding_text()

    def document_tokens(self, chunks: Iterable[Chunk]) -> dict[str, np.ndarray]:
        """Token embeddings by content sha, from the cache or encoded (and cached) in one batch."""
        found: dict[str, np.ndarray] = {}
        missing: dict[str, Chunk] = {}
        for chunk in chunks:
            sha = chunk.content_sha
            if sha in found or sha in missing:
                continue
            cached = self.cache.get(sha)
            if cached is not None:
                found[sha] = cached
            else:
                missing[sha] = chunk
        if missing:
            shas = list(missing)
            encoded = self.encoder.encode_tokens(
                [self._doc_text(missing[s]) for s in shas], self.config.doc_max_length
            )
            for sha, tokens in zip(shas, encoded):
                self.cache.put(sha, tokens)
                found[sha] = np.asarray(tokens, dtype=np.float32)
        return found

    # -- the work -------------------------------------------------------------------------------

    def rerank(self, query: str, hits: list[Hit], chunks: dict[str, Chunk]) -> list[Hit]:
        """Re-score the first `top_n` hits; see the module docstring for the formula.

        A hit whose chunk is in neither `chunks` nor `hit.chunk` gets MaxSim 0 (and no `scores` entry).
        """
        head, tail = hits[: self.config.top_n], hits[self.config.top_n :]
        if not head:
            return list(hits)
        resolved = {h.chunk_id: chunks.get(h.chunk_id) or h.chunk for h in head}
        late_scores, from_store = self._late_scores(query, [c for c in resolved.values() if c is not None])
        top_fused = max(h.score for h in head)
        w = self.config.weight
        ordered: list[tuple[float, int, Hit]] = []
        for position, hit in enumerate(head):
            chunk = resolved[hit.chunk_id]
            late = late_scores.get(hit.chunk_id) if chunk else None
            fused_norm = hit.score / top_fused if top_fused > 0 else 0.0
            score = (1.0 - w) * fused_norm + w * max(0.0, late or 0.0)
            source = "stored" if hit.chunk_id in from_store else "encoded"
            note = f"late MaxSim {late:.3f} ({source})" if late is not None else \
                f"late MaxSim n/a ({'token vectors building' if chunk else 'no chunk'})"
            ordered.append((score, position, rescored(
                hit, LATE_STAGE, late, score=score, chunk=chunk, explanation=f"{hit.explanation}; {note} -> {score:.4f}",
            )))
        ordered.sort(key=lambda item: (-item[0], item[1]))
        return [hit for _, _, hit in ordered] + list(tail)


@register_reranker(LATE_STAGE)
class LateInteractionStage:
    """The registered stage: MaxSim over stored token vectors for every intent (limiting it to some lost its
    golden gain); queries that are one identifier skip it (`skip_identifier_queries`). Owns its encoder and
    token cache; the Serve graph gives it its own deployment."""

    name, optional, deployed = LATE_STAGE, True, True

    def __init__(self, stages: Any) -> None:
        self.stages = stages
        self.config: LateInteractionConfig = stages.config.late_interaction

    @cached_property
    def model(self) -> LateInteractionReranker:
        encoder = self.stages.encoder_factory()
        # one token cache per model and truncation length: vectors never mix
        model_dir = f"{safe_name(self.config.model_path or encoder.model_id)}-len{self.config.doc_max_length}"
        cache = TokenEmbeddingCache(Path(self.stages.config.paths.cache_dir) / LATE_CACHE_DIR / model_dir,
                                    self.config.memory_cache_items, self.config.dtype)
        return LateInteractionReranker(self.config, encoder, cache, stored=self._stored_tokens,
                                       query_tokens=self.stages.query_encoder.tokens, building=self._building)

    def _stored_tokens(self, repo: str) -> tuple[StoredTokenVectors, dict[str, int]] | None:
        snapshot = self.stages.snapshots.get(repo)
        store = snapshot.token_vectors
        return (store, snapshot.chunk_row) if store is not None else None

    def _building(self, repo: str) -> bool:
        return self.stages.snapshots.get(repo).building(TOKENS_KIND)

    def warm_up(self) -> None:
        if self.config.enabled:
            self.model.encoder.encode_query(WARM_UP_TEXT)

    def wanted(self, given: RerankInput) -> bool:
        if given.request.late_interaction is not None:
            return given.request.late_interaction
        if self.config.skip_identifier_queries and identifier_only(given.request.query, max_words=1):
            return False
        return self.config.enabled

    def rerank(self, hits: list[Hit], given: RerankInput) -> list[Hit]:
        repos = {c.repo for h in hits[: self.config.top_n] if (c := given.chunks.get(h.chunk_id) or h.chunk)}
        if repos and all(self._building(repo) for repo in repos):
            return list(hits)  # every head hit's token vectors are still building: the encoder is not even loaded
        return self.model.rerank(given.request.query, hits, given.chunks)

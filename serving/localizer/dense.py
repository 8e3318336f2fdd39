"""The dense function channel at query time (`localizer.dense_model`): the top `dense_depth` functions of the
blended order, re-ranked with the cosine of a code-trained encoder (semantica/stores/localizer/dense.py), and the file
order re-ranked by each file's best cosine among its top `dense_file_head` functions (`dense_file_depth`).

The channel owns its encoder (loaded on first use, its own model: the index's encoder is not changed) and keeps
function vectors in memory by source text, so a function is encoded once per process however many queries and
snapshots share it; the first query over a snapshot pays for its top functions (docs/localizer.md gives the cost).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

from semantica.config import EncoderConfig, LocalizerConfig
from semantica.languages import language_of
from semantica.runtime.encoder import Encoder, PendingEncoding, shared_encoder
from semantica.stores.localizer.dense import (
    DenseFusion,
    StoredFunctionVectors,
    channel_encoder_config,
    channel_keys,
    cosines,
    file_cosines,
    text_sha,
)

PENDING_QUERIES = 8  # query vectors kept between a search's start and its localizer stage (concurrent searches)


class DenseFunctionChannel:
    """Re-ranks a function order with the channel's encoder; one instance per pipeline, thread-safe."""

    def __init__(self, config: LocalizerConfig, encoder_config: EncoderConfig) -> None:
        """`encoder_config`: the index encoder's, for the runtime and export cache only."""
        self.config = config
        self.fusion = DenseFusion(config.dense_depth, config.dense_rrf_k, config.dense_weight)
        self.file_fusion = DenseFusion(config.dense_file_depth, config.dense_file_rrf_k, config.dense_file_weight) \
            if config.dense_file_depth > 0 else None
        self.file_head = config.dense_file_head if self.file_fusion else 0
        self.encoder_config = channel_encoder_config(config, encoder_config)
        self._encoder: Encoder | None = None
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._pending: OrderedDict[str, PendingEncoding] = OrderedDict()

    def _untrusted(self, files: Sequence[str]) -> frozenset[str]:
        """The files among the re-ranked head whose language is not in `dense_file_languages`: they keep their place."""
        return frozenset(p for p in files[: self.config.dense_file_depth]
                         if language_of(p) not in self.config.dense_file_languages)

    def warm_up(self) -> Encoder:
        """The channel's encoder, loaded once (an ONNX export on its first use on a machine)."""
        if self._encoder is None:
            self._encoder = shared_encoder(self.encoder_config)
        return self._encoder

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of `texts`, each encoded once per process (newest `dense_cache_items` kept)."""
        digests = [text_sha(text) for text in texts]
        with self._lock:
            found = {d: self._vectors[d] for d in digests if d in self._vectors}
        missing = {d: t for d, t in zip(digests, texts) if d not in found}
        if missing:
            encoded = self.warm_up().encode(list(missing.values()), self.config.dense_max_length)
            found.update(zip(missing, encoded.astype(np.float16).astype(np.float32)))  # as stored at index time
            with self._lock:
                self._vectors.update((d, found[d]) for d in missing)
                while len(self._vectors) > self.config.dense_cache_items:
                    self._vectors.popitem(last=False)
        return np.stack([found[d] for d in digests])

    def encode_query(self, query: str) -> PendingEncoding:
        """The query's vector under the channel's encoder (one row), cut at `dense_query_max_length` tokens as the
        model was trained, begun now: the pipeline asks for it when a search starts, so it runs beside retrieval,
        and the stage's later call gets the same pass (the newest `PENDING_QUERIES` are kept)."""
        with self._lock:
            pending = self._pending.get(query)
        if pending is None:
            try:
                started = self.warm_up().start([query], self.encoder_config.query_max_length, keep_tokens=False)
            except Exception as exc:  # noqa: BLE001 - a model that cannot load fails where the vector is read
                started = PendingEncoding.failed(exc)
            with self._lock:
                pending = self._pending.setdefault(query, started)
                while len(self._pending) > PENDING_QUERIES:
                    self._pending.popitem(last=False)
        return pending

    def rerank(self, query_vector: PendingEncoding, functions: Sequence[str], files: Sequence[str],
               text_of: Callable[[str], str | None],
               stored: StoredFunctionVectors | None = None) -> tuple[list[str], list[str]]:
        """The function order with its top `dense_depth` re-ranked, and the file order re-ranked by each file's
        best cosine among the top `dense_file_head` functions of the same order (`dense_file_depth` > 0; else as
        given). A function's vector comes from `stored` (the served snapshot's own, written at index time by the
        same encoder), else from its source, `text_of(key)`, encoded once per process; a key with neither, or one
        `channel_keys` leaves out (test code), keeps its place in the ranking term only."""
        scored = list(functions[: max(self.fusion.depth, self.file_head)])
        encoder = self.warm_up()
        usable = stored if stored is not None and stored.model_id == encoder.model_id else None
        covered = channel_keys(scored)
        known = {key: vector for key in covered if usable is not None and (vector := usable.vector(key)) is not None}
        texts = {key: text for key in covered if key not in known and (text := text_of(key))}
        if texts:
            known.update(zip(texts, self.vectors(list(texts.values()))))
        if not known:
            return list(functions), list(files)
        keys = [key for key in scored if key in known]
        cosine = cosines(query_vector.result()[0], keys, np.stack([known[k] for k in keys]))
        file_order = self.file_fusion.fuse(files, file_cosines(scored[: self.file_head], cosine), self._untrusted(files)) \
            if self.file_fusion else list(files)
        return self.fusion.fuse(functions, cosine), file_order

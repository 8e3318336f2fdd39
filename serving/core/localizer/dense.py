"""The dense function channel at query time (`localizer.dense_model`): the top `dense_depth` functions of the
blended order, re-ranked with the cosine of a code-trained encoder (semantica/localizer/dense.py).

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
from semantica.encoder import Encoder, shared_encoder
from semantica.localizer.dense import DenseFusion, StoredFunctionVectors, channel_encoder_config, cosines, text_sha


class DenseFunctionChannel:
    """Re-ranks a function order with the channel's encoder; one instance per pipeline, thread-safe."""

    def __init__(self, config: LocalizerConfig, encoder_config: EncoderConfig) -> None:
        """`encoder_config`: the index encoder's, for the runtime and export cache only."""
        self.config = config
        self.fusion = DenseFusion(config.dense_depth, config.dense_rrf_k, config.dense_weight)
        self.encoder_config = channel_encoder_config(config, encoder_config)
        self._encoder: Encoder | None = None
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

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
            found.update(zip(missing, self.warm_up().encode(list(missing.values()), self.config.dense_max_length)))
            with self._lock:
                self._vectors.update((d, found[d]) for d in missing)
                while len(self._vectors) > self.config.dense_cache_items:
                    self._vectors.popitem(last=False)
        return np.stack([found[d] for d in digests])

    def rerank(self, query: str, order: Sequence[str], text_of: Callable[[str], str | None],
               stored: StoredFunctionVectors | None = None) -> list[str]:
        """`order` with its top `dense_depth` re-ranked; `text_of(key)` gives a function's source (None: a key the
        snapshot cannot show keeps its place in the ranking term only). A function whose vector the snapshot
        stores (`stored`, same encoder, same source) is not encoded again."""
        head = list(order[: self.fusion.depth])
        texts = {key: text for key in head if (text := text_of(key))}
        if not texts:
            return list(order)
        encoder = self.warm_up()
        usable = stored if stored is not None and stored.model_id == encoder.model_id else None
        known = {key: vector for key in texts if usable and (vector := usable.get(key, text_sha(texts[key]))) is not None}
        rest = [key for key in texts if key not in known]
        if rest:
            known.update(zip(rest, self.vectors([texts[k] for k in rest])))
        keys = list(texts)
        query_vector = encoder.encode([query], self.encoder_config.query_max_length)[0]
        return self.fusion.fuse(order, cosines(query_vector, keys, np.stack([known[k] for k in keys])))

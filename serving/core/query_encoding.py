"""One encoder pass per query: the sentence vector (dense retrieval) and the token vectors (late
interaction) come from the same forward pass and are kept in a small LRU, so a query is encoded once. The pass
can begin when the search begins (`start`), so it runs beside intent and the other retrievers."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from semantica.runtime.encoder import Encoder, PendingEncoding

log = logging.getLogger(__name__)

QueryEncoding = tuple[np.ndarray, np.ndarray]
"""(sentence vector (dim,), token vectors (n_tokens, dim)), both unit length."""


class QueryEncoder:
    """`vector(text)` and `tokens(text)` share one encoder pass per distinct text, begun by `start` or by the first
    of them to ask."""

    def __init__(self, encoder_factory: Callable[[], Encoder], max_items: int) -> None:
        self._encoder_factory = encoder_factory
        self.max_items = max(1, max_items)
        self._memory: OrderedDict[str, PendingEncoding] = OrderedDict()
        self._lock = threading.Lock()

    def start(self, text: str) -> None:
        """Begin encoding `text` now; `vector` and `tokens` collect it. An encoder that cannot load begins nothing:
        the vector retriever meets the same error when it asks, and the answer says it is degraded."""
        try:
            self._pending(text)
        except Exception:  # noqa: BLE001 - reported by the reader that needs the vector, not by the head start
            log.debug("the query's encoding could not begin", exc_info=True)

    def _pending(self, text: str) -> PendingEncoding:
        with self._lock:
            found = self._memory.get(text)
            if found is not None:
                self._memory.move_to_end(text)
                return found
        encoder = self._encoder_factory()  # outside the lock: a first call loads the model
        started = encoder.start([text or ""], encoder.config.query_max_length)
        with self._lock:
            found = self._memory.setdefault(text, started)  # a racing caller's pass, if it came first
            self._memory.move_to_end(text)
            while len(self._memory) > self.max_items:
                self._memory.popitem(last=False)
        return found

    def encode(self, text: str) -> QueryEncoding:
        pending = self._pending(text)
        try:
            vectors, tokens = pending.result()
        except Exception:
            with self._lock:  # a failed pass is not remembered: the next search encodes again
                if self._memory.get(text) is pending:
                    del self._memory[text]
            raise
        return vectors[0], tokens[0]

    def vector(self, text: str) -> np.ndarray:
        return self.encode(text)[0]

    def tokens(self, text: str) -> np.ndarray:
        return self.encode(text)[1]

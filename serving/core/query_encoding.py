"""One encoder pass per query: the sentence vector (dense retrieval) and the token vectors (late
interaction) come from the same forward pass and are kept in a small LRU, so a query is encoded once."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from semantica.runtime.encoder import Encoder

QueryEncoding = tuple[np.ndarray, np.ndarray]
"""(sentence vector (dim,), token vectors (n_tokens, dim)), both unit length."""


class QueryEncoder:
    """`vector(text)` and `tokens(text)` share one `encode_with_tokens` call per distinct text."""

    def __init__(self, encoder_factory: Callable[[], Encoder], max_items: int) -> None:
        self._encoder_factory = encoder_factory
        self.max_items = max(1, max_items)
        self._memory: OrderedDict[str, QueryEncoding] = OrderedDict()
        self._lock = threading.Lock()

    def encode(self, text: str) -> QueryEncoding:
        with self._lock:
            found = self._memory.get(text)
            if found is not None:
                self._memory.move_to_end(text)
                return found
        encoder = self._encoder_factory()
        vectors, tokens = encoder.encode_with_tokens([text or ""], encoder.config.query_max_length)
        found = (vectors[0], tokens[0])
        with self._lock:
            self._memory[text] = found
            while len(self._memory) > self.max_items:
                self._memory.popitem(last=False)
        return found

    def vector(self, text: str) -> np.ndarray:
        return self.encode(text)[0]

    def tokens(self, text: str) -> np.ndarray:
        return self.encode(text)[1]

"""Whole answers kept per (snapshot ids, request): a repeated query costs a dictionary lookup.

A key names the snapshots that answered, so a new snapshot never meets an old answer; `put` also drops
the answers of a repository's superseded snapshots at once (they can never be asked for again), instead
of letting them age out of the LRU while they hold memory and push out live answers.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

Answer = TypeVar("Answer")


class ResultCache(Generic[Answer]):
    """An LRU of answers keyed by `(snapshot ids, *request fields)` (`SearchRequest.cache_key`); thread-safe."""

    def __init__(self, max_items: int) -> None:
        self.max_items = max(0, max_items)
        self._items: OrderedDict[tuple, Answer] = OrderedDict()
        self._current: dict[str, str] = {}  # repository -> the snapshot id of its latest cached answer
        self._lock = threading.Lock()

    def get(self, key: tuple) -> Answer | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple, answer: Answer, snapshots: dict[str, str]) -> None:
        """Keep `answer`, made from `snapshots` (repository -> snapshot id); a repository whose snapshot
        changed since an earlier answer has its older answers forgotten now."""
        if self.max_items == 0:
            return
        with self._lock:
            gone = {old for repo, old in self._current.items() if repo in snapshots and snapshots[repo] != old}
            if gone:
                for stale in [k for k in self._items if gone & set(k[0])]:
                    del self._items[stale]
            self._current.update(snapshots)
            self._items[key] = answer
            self._items.move_to_end(key)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._current.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

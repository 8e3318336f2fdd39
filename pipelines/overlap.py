"""A bounded producer/consumer: the next partition is prepared on a thread while this one is consumed.

The in-process indexer parses partition i+1 while the encoder embeds partition i (the ONNX Runtime
session releases the GIL for its forward pass). The producer runs at most `depth` partitions ahead, so
memory stays bounded; an error on either side stops both and is raised in the consumer.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar

In = TypeVar("In")
Out = TypeVar("Out")

_DONE = object()
PUT_POLL_S = 0.1  # how often a blocked producer checks whether the consumer stopped


def partitions(items: Sequence[In], size: int) -> list[list[In]]:
    """Consecutive slices of at most `size` items (one slice, all of them, when `size` <= 0)."""
    if size <= 0 or len(items) <= size:
        return [list(items)] if items else []
    return [list(items[start : start + size]) for start in range(0, len(items), size)]


class Prefetcher(Generic[In, Out]):
    """Yields `produce(part)` for each part in order, computing up to `depth` parts ahead on one thread."""

    def __init__(self, produce: Callable[[In], Out], depth: int, name: str = "prefetch") -> None:
        self.produce = produce
        self.depth = max(1, depth)
        self.name = name

    def run(self, parts: Sequence[In]) -> Iterator[Out]:
        ready: queue.Queue[object] = queue.Queue(maxsize=self.depth)
        stop = threading.Event()

        def offer(item: object) -> bool:
            while not stop.is_set():
                try:
                    ready.put(item, timeout=PUT_POLL_S)
                    return True
                except queue.Full:
                    continue
            return False

        def work() -> None:
            try:
                for part in parts:
                    if stop.is_set() or not offer((self.produce(part),)):
                        return
                offer(_DONE)
            except BaseException as exc:  # handed to the consumer, raised there
                offer(exc)

        thread = threading.Thread(target=work, name=self.name, daemon=True)
        thread.start()
        try:
            while True:
                item = ready.get()
                if item is _DONE:
                    return
                if isinstance(item, BaseException):
                    raise item
                assert isinstance(item, tuple)
                yield item[0]
        finally:
            stop.set()
            thread.join()

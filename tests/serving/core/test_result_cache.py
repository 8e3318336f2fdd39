"""The answer cache: LRU-bounded, and a repository's new snapshot drops the answers of its old one."""

from __future__ import annotations

from serving.core.result_cache import ResultCache


def key(snapshot_ids: tuple[str, ...], query: str) -> tuple:
    return (snapshot_ids, query, 10)


def test_a_new_snapshot_drops_the_old_snapshots_answers_and_keeps_other_repositories() -> None:
    cache: ResultCache[str] = ResultCache(max_items=10)
    cache.put(key(("a1",), "q"), "a1 answer", {"a": "a1"})
    cache.put(key(("b1",), "q"), "b1 answer", {"b": "b1"})
    cache.put(key(("a1", "b1"), "q"), "both answer", {"a": "a1", "b": "b1"})
    assert cache.get(key(("a1",), "q")) == "a1 answer"

    cache.put(key(("a2",), "q"), "a2 answer", {"a": "a2"})  # repository a was re-indexed

    assert cache.get(key(("a1",), "q")) is None
    assert cache.get(key(("a1", "b1"), "q")) is None  # named a's old snapshot too
    assert cache.get(key(("b1",), "q")) == "b1 answer"
    assert cache.get(key(("a2",), "q")) == "a2 answer"
    assert len(cache) == 2


def test_least_recently_used_answers_go_first_and_size_zero_keeps_nothing() -> None:
    cache: ResultCache[int] = ResultCache(max_items=2)
    for number in range(3):
        cache.put(key(("s",), f"q{number}"), number, {"r": "s"})
        cache.get(key(("s",), "q0"))  # q0 stays in use
    assert cache.get(key(("s",), "q0")) == 0 and cache.get(key(("s",), "q1")) is None
    assert cache.get(key(("s",), "q2")) == 2

    off: ResultCache[int] = ResultCache(max_items=0)
    off.put(key(("s",), "q"), 1, {"r": "s"})
    assert off.get(key(("s",), "q")) is None and len(off) == 0

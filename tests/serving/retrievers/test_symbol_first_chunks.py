"""The symbol retriever's first k chunks come from sorting only the best-scoring symbols, and equal a full sort:
ties at the floor, several symbols per chunk and fewer chunks than k in the head included."""

from __future__ import annotations

import random
from types import SimpleNamespace

from serving.retrievers.symbol import SymbolRetriever


def test_the_first_chunks_equal_a_full_sort() -> None:
    rng = random.Random(7)
    for trial in range(300):
        symbols = rng.choice([20, 300, 3000])
        chunks = max(1, symbols // rng.choice([1, 3, 50]))  # up to 50 symbols per chunk: the head may hold too few
        retriever = SymbolRetriever.__new__(SymbolRetriever)
        retriever.symbols = [SimpleNamespace(symbol_id=f"s{rng.randrange(10**6):06d}", chunk_id=f"c{rng.randrange(chunks)}")
                             for _ in range(symbols)]
        tiers = [5.0, 4.0, 3.0, 1.5, rng.random() + 1.0]  # a few scores: ties at every floor
        best = {i: rng.choice(tiers) for i in rng.sample(range(symbols), rng.randint(1, symbols))}
        k = rng.choice([1, 10, 100])
        # the reference: every scored symbol sorted (the fallback path), against the head-only sort
        assert retriever._first_chunks(best, k) == retriever._distinct(list(best.items()), k), trial

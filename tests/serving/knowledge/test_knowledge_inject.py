"""The query-time pieces on hand-made hits: the bounded boost keeps the incoming order except for the hits an
entry names, dedupe drops the entry's own document, render keeps to its share of the budget."""

from __future__ import annotations

from semantica.config import load_config
from semantica.hits import Hit
from semantica.schema import Chunk
from serving.knowledge.entry import Entry
from serving.knowledge.inject import KnowledgeInjector, UsedEntry


def _chunk(path: str, symbol: str, content: str = "code") -> Chunk:
    return Chunk.build("a/b", path, "python", 1, 5, "function", symbol, content)


def _setup():
    chunks = [_chunk("graph.py", "exact_answer"), _chunk("x.py", "first"), _chunk("y.py", "second"),
              _chunk("prices.py", "price_of"), _chunk("docs/adr/1.md", "", "Prices are integer cents everywhere.")]
    scores = [0.9, 0.05, 0.04, 0.039, 0.03]  # a routed exact answer leads with its own score scale
    hits = [Hit(c.chunk_id, s, s) for c, s in zip(chunks, scores)]
    entry = Entry(id="k-1", title="Prices in cents", text="Prices are integer cents everywhere.", repo="a/b",
                  symbols=["price_of"], paths=["serving/"], source_kind="adr", source_ref="docs/adr/1.md")
    return {c.chunk_id: c for c in chunks}, hits, [UsedEntry(entry, 0.8, 3)]


def test_boost_moves_only_the_named_hit_and_only_past_what_it_outscores():
    chunks, hits, used = _setup()
    injector = KnowledgeInjector(load_config(None, [], environ={}))
    assert injector.boost(list(hits), used, chunks, 3) == hits  # price_of is not in the answer's first 3: it stays out
    order = [chunks[h.chunk_id].symbol for h in injector.boost(list(hits), used, chunks, 5)]
    assert order == ["exact_answer", "first", "price_of", "second", ""]  # 0.039 x 1.12 > 0.04, < 0.05
    assert "knowledge boost x1.120" in hits[3].explanation
    assert injector.boost(list(hits), [], chunks, 5) == hits


def test_dedupe_and_render():
    chunks, hits, used = _setup()
    injector = KnowledgeInjector(load_config(None, [], environ={}))
    kept = injector.dedupe(hits, used, chunks)
    assert [chunks[h.chunk_id].path for h in kept] == ["graph.py", "x.py", "y.py", "prices.py"]
    rendered = injector.render(used, 4000)
    assert rendered.text.startswith("# knowledge:k-1 [fact] trust=0.80 source=adr:docs/adr/1.md verified=never")
    assert 0 < rendered.tokens <= 1000
    assert injector.render(used, 20).entries == []  # no room in 25% of 20 tokens: nothing half-injected

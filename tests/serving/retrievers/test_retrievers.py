"""Retriever logic on real records (symbol tiers, filters, merging); index-backed search is covered
over a real snapshot in test_pipeline.py."""

from semantica.schema import Chunk, Symbol, module_of
from serving.core.intent import IntentClassifier
from serving.retrievers.base import Filters, RetrievalQuery, merge_scored, to_ranked
from serving.retrievers.symbol import SymbolRetriever


def make(path, qualname, kind="function", language="python"):
    chunk = Chunk.build("r", path, language, 1, 3, kind, qualname, f"def {qualname.split('.')[-1]}(): pass")
    symbol = Symbol(symbol_id=f"{path}::{qualname}", repo="r", path=path, name=qualname.split(".")[-1],
                    qualname=qualname, module=module_of(path), kind=kind, language=language, start_line=1,
                    end_line=3, chunk_id=chunk.chunk_id)
    return chunk, symbol


ROWS = [make("requests/models.py", "Request.register_hook", "method"), make("requests/hooks.py", "dispatch_hook"),
        make("requests/models.py", "Request", "class"), make("tests/test_hooks.py", "test_register_hooks"),
        make("web/app.ts", "registerHandler", language="typescript")]
CHUNKS = {c.chunk_id: c for c, _ in ROWS}
RETRIEVER = SymbolRetriever([s for _, s in ROWS], CHUNKS)
INTENT = IntentClassifier()


def symbols(query, k=10, filters=None):
    hits = RETRIEVER.search(RetrievalQuery(query, INTENT.classify(query)), k, filters)
    return [CHUNKS[c].symbol for c, _ in hits]


def test_exact_fqn_beats_name_beats_prefix_beats_parts():
    assert symbols("requests.models::Request.register_hook")[0] == "Request.register_hook"
    assert symbols("Request.register_hook")[0] == "Request.register_hook"
    found = symbols("register_hook")
    assert found[0] == "Request.register_hook" and "test_register_hooks" in found


def test_prefix_and_parts_find_related_names():
    assert "registerHandler" in symbols("registerHandler")
    assert "dispatch_hook" in symbols("dispatch_hook please")


def test_filters_and_k():
    assert symbols("register_hook", filters=Filters(path_globs=["tests/*"])) == ["test_register_hooks"]
    assert symbols("register_hook", filters=Filters(languages=["typescript"])) == ["registerHandler"]  # by parts
    assert symbols("register_hook", filters=Filters(languages=["go"])) == []
    assert len(symbols("register_hook", k=1)) == 1
    assert RETRIEVER.search("register_hook", 0) == []


def test_merge_keeps_best_score_and_ranks_from_one():
    merged = merge_scored([[("a", 0.5), ("b", 0.4)], [("b", 0.9), ("c", 0.1)]], k=2)
    assert merged == [("b", 0.9), ("a", 0.5)]
    assert to_ranked(merged) == [("b", 1), ("a", 2)]

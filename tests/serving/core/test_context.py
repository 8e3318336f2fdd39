"""Context builder: dedupe, budget, trimming, citations, file context."""

from __future__ import annotations

import pytest

from semantica.config import ContextConfig
from semantica.hits import Hit
from semantica.schema import Chunk
from semantica.stores.tokenizer import count_tokens
from serving.core.context import ContextBuilder

FILE = [f"line_{i} = compute({i})" for i in range(1, 201)]  # 200 lines, 3 tokens each


def _chunk(path: str, start: int, end: int, repo: str = "r") -> Chunk:
    content = "\n".join(FILE[start - 1 : end])
    return Chunk.build(repo, path, "python", start, end, "function", f"f{start}", content)


def _hits(chunks: list[Chunk]) -> list[Hit]:
    return [Hit(chunk_id=c.chunk_id, score=1.0 / (i + 1), fused_score=1.0 / (i + 1))
            for i, c in enumerate(chunks)]


def _table(chunks: list[Chunk]) -> dict[str, Chunk]:
    return {c.chunk_id: c for c in chunks}


def test_citations_and_chunk_text() -> None:
    chunks = [_chunk("a.py", 10, 14), _chunk("b/c.py", 1, 3)]
    ctx = ContextBuilder(ContextConfig()).build(_hits(chunks), _table(chunks))
    assert [b.citation for b in ctx.blocks] == ["a.py:10-14", "b/c.py:1-3"]
    assert ctx.blocks[0].text == chunks[0].content
    assert ctx.blocks[0].chunk_id == chunks[0].chunk_id and ctx.blocks[0].repo == "r"
    assert ctx.tokens_used == sum(b.tokens for b in ctx.blocks)
    assert ctx.tokens_used == sum(count_tokens(b.citation) + count_tokens(b.text) for b in ctx.blocks)
    assert not ctx.truncated and ctx.budget == 4000
    assert "# a.py:10-14\nline_10" in ctx.render()


def test_context_lines_from_file() -> None:
    chunks = [_chunk("a.py", 10, 14), _chunk("a.py", 1, 2)]
    ctx = ContextBuilder(ContextConfig(context_lines=2)).build(
        _hits(chunks), _table(chunks), file_lines=lambda repo, path: FILE
    )
    assert [b.citation for b in ctx.blocks] == ["a.py:8-16", "a.py:1-4"]  # clamped at line 1
    assert ctx.blocks[0].text.splitlines()[0] == FILE[7]


def test_unreadable_file_falls_back_to_chunk_text() -> None:
    def broken(repo: str, path: str) -> list[str]:
        raise FileNotFoundError(path)

    chunks = [_chunk("a.py", 10, 14)]
    ctx = ContextBuilder(ContextConfig()).build(_hits(chunks), _table(chunks), file_lines=broken)
    assert ctx.blocks[0].citation == "a.py:10-14"


def test_dedupe_overlapping_keeps_better_hit() -> None:
    best = _chunk("a.py", 10, 30)
    overlapping = _chunk("a.py", 25, 40)
    other_file = _chunk("b.py", 25, 40)
    other_repo = _chunk("a.py", 25, 40, repo="r2")
    adjacent = _chunk("a.py", 31, 35)
    chunks = [best, overlapping, other_file, other_repo, adjacent, best]
    ctx = ContextBuilder(ContextConfig()).build(_hits(chunks), _table(chunks))
    ids = [b.chunk_id for b in ctx.blocks]
    assert ids == [best.chunk_id, other_file.chunk_id, other_repo.chunk_id, adjacent.chunk_id]


def test_block_trimmed_to_max_lines() -> None:
    chunks = [_chunk("a.py", 1, 100)]
    ctx = ContextBuilder(ContextConfig(max_block_lines=24)).build(_hits(chunks), _table(chunks))
    (block,) = ctx.blocks
    assert len(block.text.splitlines()) == 24
    assert block.citation == "a.py:1-24" and block.end_line == 24 and block.trimmed


def test_budget_respected_and_truncated_flag() -> None:
    chunks = [_chunk(f"f{i}.py", 1, 20) for i in range(50)]  # ~61 tokens each
    cfg = ContextConfig(token_budget=400, fill_ratio=0.95)
    ctx = ContextBuilder(cfg).build(_hits(chunks), _table(chunks))
    assert ctx.tokens_used <= 0.95 * 400
    assert ctx.truncated
    assert 5 <= len(ctx.blocks) <= 7
    # the last block may be cut to fit, keeping at least 3 lines
    assert all(len(b.text.splitlines()) >= 3 for b in ctx.blocks)
    assert [b.chunk_id for b in ctx.blocks] == [c.chunk_id for c in chunks[: len(ctx.blocks)]]


def test_budget_override_and_zero_budget() -> None:
    chunks = [_chunk("a.py", 1, 5)]
    builder = ContextBuilder(ContextConfig())
    ctx = builder.build(_hits(chunks), _table(chunks), budget=0)
    assert ctx.blocks == [] and ctx.truncated and ctx.tokens_used == 0 and ctx.budget == 0
    with pytest.raises(ValueError):
        builder.build(_hits(chunks), _table(chunks), budget=-1)


def test_empty_and_missing() -> None:
    builder = ContextBuilder(ContextConfig())
    ctx = builder.build([], {})
    assert ctx.blocks == [] and ctx.tokens_used == 0 and not ctx.truncated
    ghost = Hit(chunk_id="ghost", score=1.0, fused_score=1.0)
    assert builder.build([ghost], {}).blocks == []
    chunk = _chunk("a.py", 1, 2)
    attached = Hit(chunk_id=chunk.chunk_id, score=1.0, fused_score=1.0, chunk=chunk)
    assert [b.chunk_id for b in builder.build([attached], {}).blocks] == [chunk.chunk_id]


def test_huge_chunk_is_cheap() -> None:
    content = "\n".join(f"x{i} = {i}" for i in range(100_000))
    chunk = Chunk.build("r", "big.py", "python", 1, 100_000, "window", "", content)
    ctx = ContextBuilder(ContextConfig()).build(_hits([chunk]), _table([chunk]))
    assert ctx.blocks[0].citation == "big.py:1-24"


def test_localizer_first_puts_top_functions_ahead_and_dedupes() -> None:
    from serving.core.context import localizer_first_hits

    body = Chunk.build("r", "a.py", "python", 1, 5, "method", "Top.run", "\n".join(FILE[0:5]))
    later = Chunk.build("r", "a.py", "python", 3, 4, "method", "Top.run", "\n".join(FILE[2:4]))  # first piece leads
    other = _chunk("b.py", 1, 3)
    table = _table([body, later, other])
    hits = _hits([other, body])
    ordered = localizer_first_hits(hits, [{"function": "a.py::Top.run"}, {"function": "gone.py::f"}], table, 5)
    assert [h.chunk_id for h in ordered] == [body.chunk_id, other.chunk_id, body.chunk_id]
    context = ContextBuilder(ContextConfig(context_lines=0)).build(ordered, table)
    assert [b.path for b in context.blocks] == ["a.py", "b.py"]  # the repeated function is packed once
    assert localizer_first_hits(hits, [{"function": "a.py::Top.run"}], table, 0) == hits
    assert localizer_first_hits(hits, [{"repo": "other", "function": "a.py::Top.run"}], table, 5) == hits
    assert localizer_first_hits(hits, [{"repo": "r", "function": "a.py::Top.run"}], table, 5)[0].chunk_id == body.chunk_id

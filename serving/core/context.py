"""Cited context for an LLM: deduplicated blocks packed into a token budget.

For each hit, best first:
1. span: the chunk's lines, widened by `context_lines` on both sides when `file_lines` gives the
   file (else the chunk's own text);
2. dedupe: a hit whose chunk overlaps (same repo and path, intersecting line ranges) a block
   already taken is dropped (the earlier, better hit wins); repeated chunk ids likewise;
3. trim: at most `max_block_lines` lines, from the top of the span (signatures come first);
4. pack: tokens (of the citation plus the text, by the builder's `count`: the pipeline's is the encoder's
   tokenizer, `semantica.runtime.token_count`, the unit MCP's `budget_tokens` counts too) are added
   while they fit in `fill_ratio` x budget. A block that does not fit is cut to the lines that do
   fit when at least `MIN_PARTIAL_LINES` lines fit, else skipped (smaller later blocks may still
   fit); either way `truncated` is set.

Citations read `path:start-end` (1-based, inclusive, after trimming).

With `localizer_first` (and the learned localizer on), `localizer_first_hits` puts the chunks of the
answer's top `localizer_functions` functions ahead of the hits, so the budget goes to them first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from semantica.config import ContextConfig
from semantica.hits import Hit
from semantica.schema import Chunk
from semantica.stores.tokenizer import count_tokens

MIN_PARTIAL_LINES = 3
"""A block cut to fit the budget keeps at least this many lines, or is skipped."""

FileLines = Callable[[str, str], list[str]]


@dataclass
class ContextBlock:
    citation: str
    repo: str
    path: str
    start_line: int
    end_line: int
    text: str
    chunk_id: str
    tokens: int = 0
    trimmed: bool = False  # lines were cut (max_block_lines or budget)


@dataclass
class Context:
    blocks: list[ContextBlock] = field(default_factory=list)
    tokens_used: int = 0
    budget: int = 0
    truncated: bool = False  # some selected hit did not fit (fully) in the budget

    def render(self) -> str:
        """Blocks as text, each under its citation."""
        return "\n\n".join(f"# {b.citation}\n{b.text}" for b in self.blocks)


def localizer_first_hits(hits: list[Hit], functions: list[dict], chunks: Mapping[str, Chunk],
                         count: int) -> list[Hit]:
    """The first chunk of each of the top `count` functions (`repo`, "path::Qualified.name"), in the localizer's
    order, then `hits`: the builder packs in this order, and its dedupe drops a hit the functions cover."""
    wanted = [(f.get("repo"), f["function"]) for f in functions[:count] if "function" in f]
    first: dict[tuple[str | None, str], Chunk] = {}
    keys = set(wanted)
    paths = {prefix for _, name in wanted for prefix in _paths_named(name)}  # a chunk of another file names none
    for chunk in chunks.values():
        if chunk.path not in paths:
            continue
        name = f"{chunk.path}::{chunk.symbol}"
        for key in ((chunk.repo, name), (None, name)):  # a function named without its repo matches any
            if key in keys and (key not in first or chunk.start_line < first[key].start_line):
                first[key] = chunk
    led = [Hit(chunk_id=first[key].chunk_id, score=0.0, fused_score=0.0, chunk=first[key])
           for key in wanted if key in first]
    return led + list(hits)


def _paths_named(name: str) -> Iterator[str]:
    """Every path `name` ("path::Qualified.name") can start with: what precedes each of its "::"."""
    at = name.find("::")
    while at >= 0:
        yield name[:at]
        at = name.find("::", at + 1)


def citation(path: str, start_line: int, end_line: int) -> str:
    return f"{path}:{start_line}-{end_line}"


class ContextBuilder:
    """`build(hits, chunks, file_lines)` -> `Context`, its tokens counted by `count` (default: whitespace words,
    the cheap measure for callers without an encoder)."""

    def __init__(self, config: ContextConfig | None = None, count: Callable[[str], int] = count_tokens) -> None:
        self.config = config or ContextConfig()
        self.count = count
        c = self.config
        if c.token_budget < 0:
            raise ValueError(f"context.token_budget must be >= 0, got {c.token_budget}")
        if not 0.0 < c.fill_ratio <= 1.0:
            raise ValueError(f"context.fill_ratio must be in (0, 1], got {c.fill_ratio}")
        if c.context_lines < 0 or c.max_block_lines < 1:
            raise ValueError("context.context_lines must be >= 0 and max_block_lines >= 1")

    def build(
        self,
        hits: list[Hit],
        chunks: dict[str, Chunk],
        file_lines: FileLines | None = None,
        budget: int | None = None,
    ) -> Context:
        """Pack `hits` (best first) into at most fill_ratio x budget tokens (budget defaults to
        config.token_budget). Hits with no chunk in `chunks` or `hit.chunk` are skipped."""
        c = self.config
        total_budget = c.token_budget if budget is None else budget
        if total_budget < 0:
            raise ValueError(f"budget must be >= 0, got {total_budget}")
        limit = int(total_budget * c.fill_ratio)
        context = Context(budget=total_budget)
        taken: dict[tuple[str, str], list[tuple[int, int]]] = {}
        seen_ids: set[str] = set()
        file_cache: dict[tuple[str, str], list[str] | None] = {}

        for hit in hits:
            chunk = chunks.get(hit.chunk_id) or hit.chunk
            if chunk is None or hit.chunk_id in seen_ids:
                continue
            seen_ids.add(hit.chunk_id)
            key = (chunk.repo, chunk.path)
            lo, hi = chunk.start_line, max(chunk.start_line, chunk.end_line)
            if any(lo <= b_hi and b_lo <= hi for b_lo, b_hi in taken.get(key, [])):
                continue
            start, lines = self._span(chunk, file_lines, file_cache)
            trimmed = len(lines) > c.max_block_lines
            lines = lines[: c.max_block_lines]
            block = self._block(chunk, start, lines, trimmed)
            remaining = limit - context.tokens_used
            if block.tokens > remaining:
                context.truncated = True
                block = self._fit(chunk, start, lines, remaining)
                if block is None:
                    continue
            context.blocks.append(block)
            context.tokens_used += block.tokens
            taken.setdefault(key, []).append((lo, hi))
        return context

    # -- pieces ---------------------------------------------------------------------------------

    def _span(
        self,
        chunk: Chunk,
        file_lines: FileLines | None,
        cache: dict[tuple[str, str], list[str] | None],
    ) -> tuple[int, list[str]]:
        """(first line number, lines) of the chunk, widened by context_lines from the file."""
        key = (chunk.repo, chunk.path)
        if file_lines is not None and key not in cache:
            try:
                cache[key] = file_lines(chunk.repo, chunk.path)
            except (OSError, KeyError, ValueError, UnicodeDecodeError):
                cache[key] = None  # the file is gone or unreadable: fall back to the chunk text
        lines = cache.get(key) if file_lines is not None else None
        if lines and chunk.end_line <= len(lines):
            n = self.config.context_lines
            start = max(1, chunk.start_line - n)
            end = min(len(lines), max(chunk.start_line, chunk.end_line) + n)
            return start, [line.rstrip("\r\n") for line in lines[start - 1 : end]]  # only the span's line ends
        return chunk.start_line, chunk.content.splitlines() or [""]

    def _block(self, chunk: Chunk, start: int, lines: list[str], trimmed: bool) -> ContextBlock:
        end = start + max(len(lines), 1) - 1
        cite = citation(chunk.path, start, end)
        text = "\n".join(lines)
        return ContextBlock(
            citation=cite, repo=chunk.repo, path=chunk.path, start_line=start, end_line=end,
            text=text, chunk_id=chunk.chunk_id, tokens=self.count(cite) + self.count(text),
            trimmed=trimmed,
        )

    def _fit(self, chunk: Chunk, start: int, lines: list[str], remaining: int) -> ContextBlock | None:
        """The longest prefix of `lines` (>= MIN_PARTIAL_LINES) whose block fits, else None."""
        if remaining <= 0:
            return None
        cite_tokens = self.count(citation(chunk.path, start, start + len(lines) - 1))
        used, keep = cite_tokens, 0
        for line in lines:
            used += self.count(line)
            if used > remaining:
                break
            keep += 1
        if keep < min(MIN_PARTIAL_LINES, len(lines)) or keep == 0:
            return None
        block = self._block(chunk, start, lines[:keep], True)
        return block if block.tokens <= remaining else None

"""Chunking: token-budget line splitting, definition pieces, line windows and doc sections.

One chunk per definition (split by token budget with overlap when long); code outside any
definition becomes line windows (kind "module"); docs split by heading (kind "section"); other text
files and files that fail to parse become windows (kind "window").
"""

from __future__ import annotations

import re

from pipelines.parse.facts import ParsedFile
from pipelines.source_files import SourceFile
from semantica.config import ChunkConfig
from semantica.schema import Chunk, ChunkKind

# A piece's overlap with the next never exceeds this fraction of its lines, so splitting progresses.
MAX_OVERLAP_FRACTION = 0.5
_MD_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_MD_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+<>:._])\1+\s*$")


def split_lines(
    tokens: list[int], lo: int, hi: int, max_tokens: int, overlap_tokens: int | None,
    max_lines: int | None = None, overlap_lines: int | None = None,
) -> list[tuple[int, int]]:
    """Split rows lo..hi (inclusive) into pieces of <= max_tokens (and <= max_lines) with overlap.

    A single line over budget becomes a piece of its own; overlap never exceeds
    MAX_OVERLAP_FRACTION of a piece, so every step moves forward.
    """
    pieces: list[tuple[int, int]] = []
    start = lo
    while start <= hi:
        end, total = start, tokens[start]
        while end < hi and total + tokens[end + 1] <= max_tokens and (max_lines is None or end + 1 - start < max_lines):
            end += 1
            total += tokens[end]
        pieces.append((start, end))
        if end >= hi:
            break
        max_back = int((end - start + 1) * MAX_OVERLAP_FRACTION)
        nxt, back_tokens, back_lines = end + 1, 0, 0
        while (
            back_lines < max_back
            and (overlap_tokens is None or back_tokens + tokens[nxt - 1] <= overlap_tokens)
            and (overlap_lines is None or back_lines < overlap_lines)
        ):
            nxt -= 1
            back_tokens += tokens[nxt]
            back_lines += 1
        start = nxt
    return pieces



class ChunkBuilder:
    """Chunk builders shared by the file parser and the code extraction (config only, cheap to pickle)."""

    def __init__(self, config: ChunkConfig) -> None:
        self.config = config

    def make(self, out: ParsedFile, file: SourceFile, lines: list[str], s: int, e: int,
              kind: ChunkKind, symbol: str) -> Chunk:
        return Chunk.build(
            repo=out.repo, path=file.path, language=file.language, start_line=s + 1, end_line=e + 1,
            kind=kind, symbol=symbol, content="\n".join(lines[s : e + 1]), blob_sha=file.blob_sha,
        )

    def windows(self, out: ParsedFile, file: SourceFile, lines: list[str], tokens: list[int],
                 lo: int, hi: int, kind: ChunkKind, symbol: str = "") -> list[Chunk]:
        """Line windows over rows lo..hi, blank edges trimmed, tiny windows dropped."""
        while lo <= hi and tokens[lo] == 0:
            lo += 1
        while hi >= lo and tokens[hi] == 0:
            hi -= 1
        if lo > hi:
            return []
        cfg = self.config
        chunks = []
        for s, e in split_lines(tokens, lo, hi, cfg.max_tokens, None, cfg.window_lines, cfg.window_overlap_lines):
            if sum(tokens[s : e + 1]) >= cfg.min_window_tokens:
                chunks.append(self.make(out, file, lines, s, e, kind, symbol))
        return chunks

    def pieces(self, out: ParsedFile, file: SourceFile, lines: list[str], tokens: list[int],
                lo: int, hi: int, kind: ChunkKind, symbol: str) -> list[Chunk]:
        """A definition or section: whole if it fits, else token-budget pieces with overlap."""
        cfg = self.config
        return [
            self.make(out, file, lines, s, e, kind, symbol)
            for s, e in split_lines(tokens, lo, hi, cfg.max_tokens, cfg.overlap_tokens)
        ]

    # -- documents --

    @staticmethod
    def markdown_headings(lines: list[str]) -> list[tuple[int, str]]:
        headings, fenced = [], False
        for row, line in enumerate(lines):
            if _MD_FENCE.match(line):
                fenced = not fenced
                continue
            match = None if fenced else _MD_HEADING.match(line)
            if match:
                headings.append((row, match.group(2)))
        return headings

    @staticmethod
    def rst_headings(lines: list[str]) -> list[tuple[int, str]]:
        headings = []
        for row in range(len(lines) - 1):
            title, under = lines[row].rstrip(), lines[row + 1].rstrip()
            if title.strip() and not _RST_UNDERLINE.match(title) and _RST_UNDERLINE.match(under) \
                    and len(under) >= len(title.strip()):
                over = row > 0 and _RST_UNDERLINE.match(lines[row - 1].rstrip())
                headings.append((row - 1 if over else row, title.strip()))
        return headings

    def sections(self, out: ParsedFile, file: SourceFile, lines: list[str], tokens: list[int],
                  headings: list[tuple[int, str]]) -> list[Chunk]:
        starts = [(0, "")] + headings if not headings or headings[0][0] > 0 else headings
        chunks: list[Chunk] = []
        for i, (row, title) in enumerate(starts):
            hi = starts[i + 1][0] - 1 if i + 1 < len(starts) else len(lines) - 1
            lo = row
            while hi >= lo and tokens[hi] == 0:
                hi -= 1
            while lo <= hi and tokens[lo] == 0:
                lo += 1
            if lo <= hi:
                chunks.extend(self.pieces(out, file, lines, tokens, lo, hi, ChunkKind.SECTION, title))
        return chunks


"""Matching one file line by line, as ripgrep does: a line matches when the pattern matches inside it (never
across a line break); its 1-based line number and the 1-based byte column of its first match are reported."""

from __future__ import annotations

from dataclasses import dataclass, field

from semantica.stores.exact.pattern import CompiledPattern

NEWLINE = b"\n"


@dataclass
class LineMatch:
    """One matching line, its text (cut to the configured length) and up to N lines around it (`-C N`)."""

    line: int
    column: int
    text: str
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)


@dataclass
class FileMatches:
    """A file's matching lines in order; `more` says the file has more than were kept."""

    lines: list[LineMatch]
    more: bool = False


def match_file(data: bytes, compiled: CompiledPattern, limit: int, context: int = 0,
               max_line_chars: int = 0, first_line: int = 1) -> FileMatches:
    """The first `limit` matching lines of `data` (UTF-8 whole lines: a file, or a segment of one whose first line
    is `first_line`). One RE2 search runs over the whole text (the program never matches a line break,
    `pattern.compile_pattern`), or `bytes.find` for a plain fixed string; a match that still ends past its line is
    checked again inside that line alone. `context` lines come from `data` itself (`add_context` for a segment)."""
    program, group, literal = compiled.program, compiled.group, compiled.literal
    found: list[LineMatch] = []
    position, line_number, counted_to = 0, first_line, 0
    size = len(data)
    while position <= size:
        if literal is not None:  # a fixed string never holds a line break: the first hit is its line's first
            start = data.find(literal, position)
            if start < 0:
                break
            end = start + len(literal)
        else:
            match = program.search(data, position)
            if match is None:
                break
            start, end = match.start(group), match.end()
        if start >= size and (size == 0 or data.endswith(NEWLINE)):  # no line after the last line break
            break
        line_start = data.rfind(NEWLINE, 0, start) + 1 if start > 0 else 0
        line_end = data.find(NEWLINE, start)
        if line_end < 0:
            line_end = size
        if end > line_end:  # crossed a line break: does the line match on its own?
            alone = program.search(data[line_start:line_end])
            start = line_start + alone.start(group) if alone is not None else -1
        if start >= 0:
            line_number += data.count(NEWLINE, counted_to, line_start)
            counted_to = line_start
            if len(found) == limit:
                return FileMatches(found, more=True)
            text = data[line_start:line_end].decode("utf-8", "replace")
            found.append(LineMatch(line_number, start - line_start + 1, _cut(text, max_line_chars)))
        position = line_end + 1
    if context > 0 and found:
        add_context(file_lines(data), found, context, max_line_chars)
    return FileMatches(found)


def file_lines(data: bytes) -> list[str]:
    """A whole file's lines, decoded (what `add_context` reads)."""
    lines = data.decode("utf-8", "replace").split("\n")
    if lines and lines[-1] == "" and data.endswith(NEWLINE):
        lines.pop()
    return lines


def add_context(lines: list[str], found: list[LineMatch], context: int, max_line_chars: int) -> None:
    """Up to `context` lines of the file (`file_lines`) before and after each match (its line is 1-based)."""
    for item in found:
        index = item.line - 1
        item.before = [_cut(t, max_line_chars) for t in lines[max(0, index - context):index]]
        item.after = [_cut(t, max_line_chars) for t in lines[index + 1:index + 1 + context]]


def _cut(text: str, limit: int) -> str:
    return text if limit <= 0 or len(text) <= limit else text[:limit]

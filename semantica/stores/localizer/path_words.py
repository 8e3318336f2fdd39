"""The words of a file's path, with compound names split by the file's own definitions.

Go's convention names files by gluing words in lowercase: `tracinghandler.go` defines `TracingHandler`,
`timingwheel.go` defines `TimingWheel`. The code tokenizer cannot split `tracinghandler` (no case, no underscore), so
a query that says "tracing handler" never meets that path. A segment is split only into the snake_case and
camelCase parts of names the file itself defines, so the split is the author's own; only files of a language whose
row says `glued_file_names` are split (the language table, `semantica/languages/table.py`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from semantica.languages import language_of, language_row
from semantica.languages.spans import strip_suffix
from semantica.stores.tokenizer import identifier_parts

PATH_WORDS = re.compile(r"[/._\-]+")
COMPOUND = re.compile(r"[a-z0-9]+")
MIN_PART_CHARS = 3  # a part shorter than this ("a", "io") splits too many words by accident
MAX_PARTS = 4


def definition_parts(qualnames: Iterable[str]) -> frozenset[str]:
    """The lowercased parts (of at least MIN_PART_CHARS) of the names a file defines: `TracingHandler.ServeHTTP` ->
    {tracing, handler, serve, http}."""
    parts: set[str] = set()
    for qualname in qualnames:
        for name in qualname.split("."):
            parts.update(p.lower() for p in identifier_parts(name) if len(p) >= MIN_PART_CHARS)
    return frozenset(parts)


def split_compound(segment: str, parts: frozenset[str]) -> list[str]:
    """`tracinghandler` -> [tracing, handler] when both are parts; [] when the segment is a part itself, is not
    lowercase, or cannot be covered by at most MAX_PARTS parts (the fewest parts win; earlier longer parts break
    ties, so the split is deterministic)."""
    if segment in parts or not COMPOUND.fullmatch(segment) or len(segment) < 2 * MIN_PART_CHARS:
        return []
    best: list[list[str] | None] = [None] * (len(segment) + 1)
    best[0] = []
    for end in range(MIN_PART_CHARS, len(segment) + 1):
        for start in range(end - MIN_PART_CHARS, -1, -1):
            head = best[start]
            word = segment[start:end]
            if head is not None and word in parts and len(head) < MAX_PARTS and \
                    (best[end] is None or len(head) + 1 < len(best[end])):
                best[end] = [*head, word]
    found = best[-1]
    return found if found and len(found) > 1 else []


def splits_compounds(path: str) -> bool:
    """Whether the file's language glues its file names' words, so its path words depend on its definitions."""
    row = language_row(language_of(path))
    return row is not None and row.glued_file_names


def path_text(path: str, qualnames: Iterable[str]) -> str:
    """The path's words for the path field: its segments, then (a language that glues file names) the split of each
    compound segment."""
    words = [w for w in PATH_WORDS.split(strip_suffix(path)) if w]
    if not splits_compounds(path):
        return " ".join(words)
    parts = definition_parts(qualnames)
    extra = [p for w in words for p in split_compound(w, parts)]
    return " ".join(words + extra)

"""Code-aware tokenizer shared by lexical indexing and querying.

`JSONDecoder.raw_decode` becomes `jsondecoder.raw_decode jsondecoder raw_decode json decoder raw
decode`: the whole identifier (so exact names match best) plus its dotted, snake_case and camelCase
parts (so `register` finds `register_hook`). Everything is lowercased; nothing is stemmed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*|\d+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z0-9])|[A-Z]?[a-z0-9]+|[A-Z]+")
_MIN_PART_CHARS = 2
_KNOWN_IDENTIFIERS = 1 << 16  # identifiers whose tokens are kept (a few MB)


def identifier_parts(identifier: str) -> list[str]:
    """`OnceCell` -> [Once, Cell], `raw_decode` -> [raw, decode]: an identifier's snake_case and camelCase parts."""
    parts: list[str] = []
    for snake in identifier.split("_"):
        if snake:
            parts.extend(_CAMEL.findall(snake))
    return parts


def tokenize(text: str) -> list[str]:
    """Lowercased code-aware tokens of `text`, in order, with repeats (term frequency matters)."""
    tokens: list[str] = []
    for whole in _IDENTIFIER.findall(text):
        tokens.extend(_identifier_tokens(whole))
    return tokens


@functools.lru_cache(maxsize=_KNOWN_IDENTIFIERS)
def _identifier_tokens(whole: str) -> tuple[str, ...]:
    """One identifier's tokens: itself, its dotted pieces, their snake_case and camelCase parts. Kept per identifier:
    code repeats its names, and indexing tokenizes every chunk, file and function once more for Lucene."""
    tokens = [whole.lower()]
    pieces = whole.split(".")
    if len(pieces) > 1:
        tokens.extend(p.lower() for p in pieces)
    for piece in pieces:
        sub = identifier_parts(piece)
        if len(sub) > 1 or (sub and sub[0] != piece):
            tokens.extend(s.lower() for s in sub if len(s) >= _MIN_PART_CHARS)
    return tuple(tokens)


def unique_terms(tokens: Iterable[str]) -> list[str]:
    """Distinct terms in first-seen order."""
    return list(dict.fromkeys(tokens))


_WORD = re.compile(r"\S+")


def count_tokens(text: str) -> int:
    """A cheap size measure for chunk budgets: whitespace-separated words plus punctuation runs."""
    return len(_WORD.findall(text))

"""Regular expressions for text a caller controls, linear in its length by construction (RE2).

Python's `re` backtracks: a pattern with nested quantifiers over overlapping classes is exponential on
the wrong input (a run of capitals ending in `[`), and an unanchored `findall` can be quadratic on a
long run. It also holds the GIL, so no deadline can stop it. RE2 runs an automaton instead: every
search is linear in the text, whatever the pattern. It has no backreferences or look-around, so a
pattern that needs them cannot be compiled here and must be rewritten.

Two differences from `re` are bridged so that a pattern means the same on both: `\\w` is rewritten to
RE2's Unicode classes (RE2's own `\\w` is ASCII), and a lone surrogate (valid in a Python string, not in
UTF-8) is matched as `?` (one character for one, so every offset stays the same).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import re2

_WORD_CLASS = r"\p{L}\p{N}\p{Mn}\p{Pc}"
"""Python's `\\w` for `str` patterns: letters, digits, combining marks and connector punctuation."""


def _translate(pattern: str) -> str:
    """`pattern` with each `\\w` spelled as a Unicode class (inside a class: its members)."""
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt == "w":
                out.append(_WORD_CLASS if in_class else f"[{_WORD_CLASS}]")
            else:
                out.append(char + nxt)
            i += 2
            continue
        if char == "[" and not in_class:
            in_class = True
            out.append(char)
            if pattern[i + 1: i + 2] == "^":
                out.append("^")
                i += 1
            if pattern[i + 1: i + 2] == "]":  # a leading `]` is a member
                out.append("]")
                i += 1
        elif char == "]" and in_class:
            in_class = False
            out.append(char)
        else:
            out.append(char)
        i += 1
    return "".join(out)


def _encodable(text: str) -> str:
    """`text` with each lone surrogate replaced by `?` (RE2 reads UTF-8; the length is unchanged)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


class LinearPattern:
    """A compiled RE2 pattern with the `re.Pattern` methods this project uses."""

    __slots__ = ("_compiled", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        options = re2.Options()
        options.log_errors = False
        try:
            self._compiled = re2.compile(_translate(pattern), options)
        except re2.error as exc:
            raise ValueError(f"not a linear-time pattern (RE2 refuses it: {exc}): {pattern!r}") from exc

    def search(self, text: str) -> Any:
        return self._compiled.search(_encodable(text))

    def match(self, text: str) -> Any:
        return self._compiled.match(_encodable(text))

    def fullmatch(self, text: str) -> Any:
        return self._compiled.fullmatch(_encodable(text))

    def finditer(self, text: str) -> Iterator[Any]:
        return self._compiled.finditer(_encodable(text))

    def findall(self, text: str) -> list[Any]:
        return self._compiled.findall(_encodable(text))

    def sub(self, repl: str | Callable[[Any], str], text: str, count: int = 0) -> str:
        return self._compiled.sub(repl, _encodable(text), count)

    def split(self, text: str, maxsplit: int = 0) -> list[str]:
        return self._compiled.split(_encodable(text), maxsplit)

    def __repr__(self) -> str:
        return f"LinearPattern({self.pattern!r})"


def compile(pattern: str) -> LinearPattern:  # noqa: A001 - mirrors re.compile on purpose
    """`pattern` compiled for linear-time matching; flags go inline (`(?i)`, `(?m)`, `(?s)`)."""
    return LinearPattern(pattern)

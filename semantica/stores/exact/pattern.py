"""A grep pattern compiled for RE2 the way ripgrep reads it, and the literals every match must contain.

RE2 is the verifier because its matching time is linear in the text: a hostile pattern such as `(a+)+$`
cannot stall a server. ripgrep's defaults are kept where RE2 differs: `\\w`, `\\d` and `\\s` are Unicode
(RE2's are ASCII), `-i` is Unicode simple case folding (RE2's `(?i)`), `-w` needs a non-word character or a
line edge on each side of the match, and a match never spans lines: RE2's `never_nl` keeps a line break out
of every class (`\\s`, `[^x]`, `\\W` ...), as ripgrep's line-oriented search does, so one search over a whole file
finds each line's matches without ever matching across a break.

The required literals (`Prefilter`) come from Python's own regex parser: a conjunction of literal runs of
at least three characters on every path through the pattern, or a disjunction of such conjunctions. They
only choose which files RE2 reads, so they may be weaker than the pattern, never stronger.
"""

from __future__ import annotations

import re
import re._constants as sre  # noqa: PLC2701 (the parser's AST opcodes)
import re._parser as sre_parse  # noqa: PLC2701
from dataclasses import dataclass, field

import re2

from semantica.api import QueryError

MIN_LITERAL = 3  # a trigram index cannot answer for a shorter literal
# Unicode classes as ripgrep means them (UTS#18 word: alphabetic, marks, decimal digits, connectors, joiners)
WORD_CLASS = r"\pL\pM\p{Nd}\p{Nl}\p{Pc}\x{200C}\x{200D}"
SPACE_CLASS = r"\t\n\x0B\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}"
_CLASS_OUTSIDE = {"w": f"[{WORD_CLASS}]", "W": f"[^{WORD_CLASS}]", "d": r"\p{Nd}", "D": r"\P{Nd}",
                  "s": f"[{SPACE_CLASS}]", "S": f"[^{SPACE_CLASS}]"}
_CLASS_INSIDE = {"w": WORD_CLASS, "d": r"\p{Nd}", "s": SPACE_CLASS}  # negations inside a class stay RE2's
# ripgrep matches line by line, so its text edges are each line's: `\A` and `\z` mean `^` and `$` (RE2 would
# read them as the edges of whatever text one search is given: a whole file, or a run of its segments)
_ESCAPES_OUTSIDE = {**_CLASS_OUTSIDE, "A": "^", "z": "$"}
# RE2 syntax Python's parser reads differently: with any of these, no literal is required (every file is read)
_RE2_ONLY = ("[:", r"\p", r"\P", r"\Q", r"\x{", r"\C", r"\z")


class PatternError(QueryError):
    """The pattern cannot be searched (invalid, too long or too large); the message says why (HTTP 400)."""


@dataclass(frozen=True)
class Literal:
    text: str


@dataclass(frozen=True)
class AllOf:
    parts: tuple[Prefilter, ...]


@dataclass(frozen=True)
class AnyOf:
    parts: tuple[Prefilter, ...]


Prefilter = Literal | AllOf | AnyOf


@dataclass(frozen=True)
class PatternSpec:
    """What a caller asked for: the pattern and the ripgrep-like switches that change what it matches."""

    pattern: str
    regex: bool = False  # False: a fixed string (rg -F)
    ignore_case: bool = False  # rg -i
    word: bool = False  # rg -w


@dataclass
class CompiledPattern:
    """The RE2 program over UTF-8 bytes (group 1 is the match when `word`), and the literals it requires."""

    spec: PatternSpec
    program: re2._Regexp
    prefilter: Prefilter | None
    group: int = 0
    notes: list[str] = field(default_factory=list)
    # a case-sensitive fixed string without word bounds: its UTF-8 bytes, found with `bytes.find` (the same lines
    # and columns as the program, without RE2's per-call cost); None for every other pattern
    literal: bytes | None = None


def compile_pattern(spec: PatternSpec, max_chars: int, max_mem: int) -> CompiledPattern:
    """`spec` as one RE2 program; PatternError when it is too long, has a line break, is not valid RE2 syntax,
    or compiles to more than `max_mem` bytes."""
    pattern = spec.pattern
    if len(pattern) > max_chars:
        raise PatternError(f"pattern of {len(pattern)} characters is longer than exact.max_pattern_chars ({max_chars})")
    if "\n" in pattern or "\r" in pattern:
        raise PatternError("the pattern holds a line break; matching is per line (search each line separately)")
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError:
        raise PatternError("the pattern is not valid Unicode (a lone surrogate)") from None
    body = re2.escape(pattern) if not spec.regex else _unicode_classes(pattern)
    group = 0
    if spec.word:
        edge = _CLASS_OUTSIDE["W"]
        body, group = f"(?:^|{edge})((?:{body}))(?:{edge}|$)", 1
    flags = "(?mi)" if spec.ignore_case else "(?m)"
    options = re2.Options()
    options.max_mem = max_mem
    options.log_errors = False
    options.never_nl = True  # no match crosses a line break (ripgrep's line terminator)
    try:
        if spec.regex:  # the caller's own pattern first: an error then quotes what the caller wrote
            re2.compile(pattern.encode("utf-8"), options)
        program = re2.compile(f"{flags}(?:{body})".encode(), options)
    except re2.error as exc:
        message = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        if "too large" in message:
            raise PatternError(f"the compiled pattern is larger than exact.max_mem_bytes ({max_mem}); "
                               "use fewer or smaller repetitions") from None
        raise PatternError(f"invalid regex: {message} (RE2 syntax: no look-around or back-references)") from None
    literal = pattern.encode("utf-8") if not (spec.regex or spec.ignore_case or spec.word) else None
    return CompiledPattern(spec, program, required_literals(spec), group, literal=literal)


def _unicode_classes(pattern: str) -> str:
    """`\\w \\W \\d \\D \\s \\S` spelled as Unicode classes and `\\A \\z` as line edges (ripgrep's meaning);
    `\\Q...\\E` is left alone."""
    out: list[str] = []
    i, depth = 0, 0  # depth: inside a [...] class
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt == "Q":
                end = pattern.find(r"\E", i + 2)
                stop = len(pattern) if end < 0 else end + 2
                out.append(pattern[i:stop])
                i = stop
                continue
            table = _CLASS_INSIDE if depth else _ESCAPES_OUTSIDE
            out.append(table.get(nxt, char + nxt))
            i += 2
            continue
        if char == "[" and not depth:
            depth = 1
            out.append(char)
            i += 1
            if pattern.startswith("^", i):
                out.append("^")
                i += 1
            if pattern.startswith("]", i):  # a leading ']' is a literal member
                out.append("]")
                i += 1
            continue
        if char == "[" and depth and pattern.startswith("[:", i):
            end = pattern.find(":]", i + 2)
            if end >= 0:
                out.append(pattern[i:end + 2])
                i = end + 2
                continue
        if char == "]" and depth:
            depth = 0
        out.append(char)
        i += 1
    return "".join(out)


def required_literals(spec: PatternSpec) -> Prefilter | None:
    """The literals every match must contain, or None when the pattern requires none a trigram index can use."""
    fold_unsafe = spec.ignore_case or (spec.regex and "(?" in spec.pattern)
    if not spec.regex:
        return _literal(spec.pattern, fold_unsafe)
    if any(marker in spec.pattern for marker in _RE2_ONLY):
        return None
    try:
        parsed = sre_parse.parse(spec.pattern)
    except (re.error, RecursionError, OverflowError, ValueError):  # RE2 accepted it; Python reads it differently
        return None
    return _sequence(list(parsed), fold_unsafe)


def _literal(text: str, fold_unsafe: bool) -> Prefilter | None:
    """A literal's runs usable by the index: under case folding only its ASCII runs (a non-ASCII letter may
    fold to a character the index folds differently)."""
    runs = [text] if not fold_unsafe else re.findall(r"[\x00-\x7f]+", text)
    parts = tuple(Literal(r) for r in runs if len(r) >= MIN_LITERAL)
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else AllOf(parts)


def _sequence(items: list, fold_unsafe: bool) -> Prefilter | None:
    """A sequence's required literals: its runs of adjacent literal characters and its required sub-parts."""
    parts: list[Prefilter] = []
    run: list[str] = []

    def flush() -> None:
        found = _literal("".join(run), fold_unsafe) if run else None
        if isinstance(found, AllOf):
            parts.extend(found.parts)
        elif found is not None:
            parts.append(found)
        run.clear()

    def walk(sequence: list) -> None:
        for op, arg in sequence:
            if op is sre.LITERAL:
                run.append(chr(arg))
            elif op is sre.SUBPATTERN and not _has_branch(arg[-1]):
                walk(list(arg[-1]))  # a group of literals continues the run around it
            elif op is sre.ATOMIC_GROUP:
                walk(list(arg))
            else:
                flush()
                found = _part(op, arg, fold_unsafe)
                if found is not None:
                    parts.append(found)
    walk(items)
    flush()
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else AllOf(tuple(parts))


def _part(op: object, arg: object, fold_unsafe: bool) -> Prefilter | None:
    if op is sre.SUBPATTERN:
        return _sequence(list(arg[-1]), fold_unsafe)
    if op is sre.BRANCH:
        branches = [_sequence(list(b), fold_unsafe) for b in arg[1]]
        if any(b is None for b in branches):
            return None
        return AnyOf(tuple(branches))  # type: ignore[arg-type]
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
        low, _high, body = arg
        return _sequence(list(body), fold_unsafe) if low >= 1 else None
    return None  # a class, any character, an anchor: nothing required


def _has_branch(sequence: object) -> bool:
    return any(op is sre.BRANCH for op, _ in sequence)


def fts_query(prefilter: Prefilter, max_trigrams: int) -> str:
    """An FTS5 query over a trigram table without positions: each literal becomes the AND of its trigrams."""
    if isinstance(prefilter, Literal):
        text = prefilter.text
        grams = list(dict.fromkeys(text[i:i + MIN_LITERAL] for i in range(len(text) - MIN_LITERAL + 1)))
        if len(grams) > max_trigrams:  # evenly spread, first and last kept
            step = (len(grams) - 1) / (max_trigrams - 1) if max_trigrams > 1 else len(grams)
            grams = list(dict.fromkeys(grams[round(i * step)] for i in range(max(1, max_trigrams))))
        return " AND ".join('"' + g.replace('"', '""') + '"' for g in grams)
    joiner = " AND " if isinstance(prefilter, AllOf) else " OR "
    return joiner.join(f"({fts_query(p, max_trigrams)})" for p in prefilter.parts)

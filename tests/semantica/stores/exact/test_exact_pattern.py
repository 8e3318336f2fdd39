"""Compiling a grep pattern for RE2 the way ripgrep reads it, the literals it requires, and the guardrails."""

from __future__ import annotations

import pytest

from semantica.errors import ErrorKind, kind_of
from semantica.stores.exact import PatternError, PatternSpec, compile_pattern, fts_query, match_file
from semantica.stores.exact.pattern import AllOf, AnyOf, Literal, required_literals

MAX_CHARS, MAX_MEM = 1000, 8 << 20


def lines(pattern: str, text: str, **switches: bool) -> list[tuple[int, int]]:
    compiled = compile_pattern(PatternSpec(pattern, **switches), MAX_CHARS, MAX_MEM)
    return [(m.line, m.column) for m in match_file(text.encode(), compiled, 100).lines]


def test_required_literals_are_runs_of_three_or_more_on_every_path() -> None:
    assert required_literals(PatternSpec("hello world")) == Literal("hello world")
    assert required_literals(PatternSpec(r"def \w+_x\(self", regex=True)) == AllOf((Literal("def "), Literal("_x(self")))
    assert required_literals(PatternSpec(r"(abc|def)+", regex=True)) == AnyOf((Literal("abc"), Literal("def")))
    assert required_literals(PatternSpec(r"(abc|de)fgh", regex=True)) == Literal("fgh")  # 'de' is too short
    assert required_literals(PatternSpec(r"(?:foo)?bar", regex=True)) == Literal("bar")  # optional: not required
    assert required_literals(PatternSpec(r"\d{3,}", regex=True)) is None
    assert required_literals(PatternSpec("ab")) is None
    # RE2 syntax Python's parser reads otherwise requires nothing (never a literal RE2 does not require)
    assert required_literals(PatternSpec(r"x[[:alpha:]]foo", regex=True)) is None
    assert required_literals(PatternSpec(r"\pLabc", regex=True)) is None
    # under case folding only ASCII runs reach the index
    assert required_literals(PatternSpec("Straße", ignore_case=True)) == Literal("Stra")


def test_fts_query_is_an_and_of_quoted_trigrams() -> None:
    assert fts_query(Literal('a"bc'), 32) == '"a""b" AND """bc"'
    assert fts_query(AnyOf((Literal("abc"), Literal("xyz"))), 32) == '("abc") OR ("xyz")'
    assert fts_query(Literal("abcdefghij"), 3).count('"') == 6  # capped, first and last kept
    assert fts_query(Literal("abcdefghij"), 3).startswith('"abc"') and fts_query(Literal("abcdefghij"), 3).endswith('"hij"')


def test_lines_and_byte_columns_are_one_based_like_rg_column() -> None:
    text = "alpha\nbéta beta\n\nbeta\n"
    assert lines("beta", text) == [(2, 7), (4, 1)]  # 'é' is two bytes: column 7, not 6
    assert lines("^$", text, regex=True) == [(3, 1)]  # no phantom line after the last line break
    assert lines("^", "", regex=True) == []


def test_a_match_never_spans_lines() -> None:
    text = "foo\nbar\nfoo bar\n"
    assert lines(r"foo\s+bar", text, regex=True) == [(3, 1)]  # \s could cross the break: it is re-checked per line
    assert lines(r"o[^x]*b", text, regex=True) == [(3, 2)]


def test_the_program_itself_never_matches_a_line_break() -> None:
    """One search over a whole file then finds only real line matches: a class holding the break (`\\s`, `[^x]`,
    `\\W`) stops at it instead of matching across lines and being re-checked line by line."""
    for pattern in (r"\s+$", r"\S\s{2,}\S", r"[^x]{3}", r"\W\W", r"a\nb"):
        compiled = compile_pattern(PatternSpec(pattern, regex=True), MAX_CHARS, MAX_MEM)
        assert compiled.program.search(b"a\n\nb\nc \n") in (None,) or pattern == r"\s+$", pattern
    trailing = compile_pattern(PatternSpec(r"\s+$", regex=True), MAX_CHARS, MAX_MEM).program.search(b"a\n\nb\nc \n")
    assert trailing is not None and trailing.span() == (6, 7)  # the one trailing space, not the empty line's break


def test_word_case_and_unicode_classes_follow_ripgrep() -> None:
    text = "path paths _path\nmy-path\nPATH\n"
    assert lines("path", text, word=True) == [(1, 1), (2, 4)]
    assert lines("path", text, word=True, ignore_case=True) == [(1, 1), (2, 4), (3, 1)]
    assert lines(r"\w+é", "café\n", regex=True) == [(1, 1)]  # \w is Unicode (RE2's own is ASCII)
    assert lines(r"^\d+$", "٣٤\n", regex=True) == [(1, 1)]  # Arabic-Indic digits are \d in rg
    assert lines("k", "\u212a\n", ignore_case=True) == [(1, 1)]  # Kelvin sign: Unicode simple case folding
    assert lines("straße", "STRASSE\n", ignore_case=True) == []  # simple folding, not full: as rg
    assert lines("a.b", "axb a.b\n") == [(1, 5)]  # a fixed string by default


def test_hostile_patterns_finish_because_re2_is_linear() -> None:
    assert lines(r"(a+)+$", "a" * 200_000 + "b\n", regex=True) == []
    assert lines(r"(a+)+$", "b" + "a" * 200_000 + "\n", regex=True) == [(1, 2)]
    assert lines(r"(a+)+c", "a" * 200_000 + "\n", regex=True) == []
    assert lines(r"(x+x+)+y", "x" * 100_000 + "\n", regex=True) == []


@pytest.mark.parametrize("pattern, regex, says", [
    ("(a", True, "invalid regex: missing )"),
    (r"(?<=a)b", True, "invalid regex"),
    (r"(\w)\1", True, "invalid regex"),
    ("a\nb", False, "line break"),
    ("x" * (MAX_CHARS + 1), False, "max_pattern_chars"),
    (r"(\pL{100}){10}", True, "max_mem_bytes"),
    (r"(a{100}){100}", True, "invalid repetition size"),
    ("\ud800", False, "lone surrogate"),
])
def test_bad_patterns_are_bad_requests_with_a_clear_message(pattern: str, regex: bool, says: str) -> None:
    with pytest.raises(PatternError) as raised:
        compile_pattern(PatternSpec(pattern, regex=regex), MAX_CHARS, MAX_MEM)
    assert says in str(raised.value)
    assert kind_of(raised.value) is ErrorKind.BAD_REQUEST and kind_of(raised.value).http_status == 400

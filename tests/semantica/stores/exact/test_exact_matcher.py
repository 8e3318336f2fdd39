"""Line matching: the per-file cap, `more`, context lines and the cut of long lines."""

from __future__ import annotations

from semantica.stores.exact import PatternSpec, compile_pattern, match_file


def compiled(pattern: str, regex: bool = False):
    return compile_pattern(PatternSpec(pattern, regex=regex), 1000, 8 << 20)


def test_the_per_file_cap_keeps_the_first_lines_and_says_there_are_more() -> None:
    data = "".join(f"hit {i}\n" for i in range(10)).encode()
    capped = match_file(data, compiled("hit"), 3)
    assert [m.line for m in capped.lines] == [1, 2, 3] and capped.more
    whole = match_file(data, compiled("hit"), 10)
    assert len(whole.lines) == 10 and not whole.more


def test_context_lines_around_each_match() -> None:
    data = b"one\ntwo\nthree\nfour\nfive"
    found = match_file(data, compiled("three"), 5, context=1).lines
    assert (found[0].before, found[0].text, found[0].after) == (["two"], "three", ["four"])
    edge = match_file(data, compiled("five"), 5, context=2).lines[0]
    assert (edge.before, edge.after) == (["three", "four"], [])


def test_long_lines_are_cut_and_bad_utf8_never_raises() -> None:
    found = match_file(b"x" * 50 + b"needle\n", compiled("needle"), 1, max_line_chars=10).lines[0]
    assert found.text == "x" * 10 and found.column == 51
    assert match_file(b"\xff needle\n", compiled("needle"), 1).lines[0].column == 3

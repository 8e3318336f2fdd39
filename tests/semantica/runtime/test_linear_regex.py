"""Every pattern applied to a caller's text runs in linear time: pathological tokens (long runs of capitals,
digits, underscores, dots, colons, slashes, mixed with punctuation) up to the request's string limit cost
each pattern well under a second. Python's backtracking `re` spent hours on 46 capitals and a `[`."""

from __future__ import annotations

import importlib
import multiprocessing
import queue as queue_module
import re
import time

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from semantica.config import load_config
from semantica.runtime import linear_regex

# The modules whose patterns read query, issue or header text a caller sends.
USER_TEXT_MODULES = (
    "serving.planning.analyzer", "serving.core.intent", "serving.planning.decompose",
    "serving.planning.repo_map", "serving.retrievers.symbol", "serving.retrievers.graph",
    "serving.graph.structural", "semantica.stores.localizer.query_signals",
)
# `re` patterns that stay: fixed-width look-arounds and no quantifier (RE2 has no look-around), or one
# literal alternation; each step of the scan is constant work.
STAYS_ON_RE: set[str] = set()
LIMIT_S = 1.0
CHILD_SLACK_S = 5.0
"""Headroom over the limit before the parent gives a pattern up as hung (the child's start, its imports)."""
DNA = "CCAGCTACTCGGGAGGCTGAGGCTGGAGGATCGCTTGAGTCCAGGAG[ATCG]{2}C"
MAX_CHARS = load_config().limits.max_string_chars
RUNS = ["A", "Z1", "_", ".", ":", "::", "a", "aA", "A_", "a.", "A.", "a/", "/", "-", "1", " ", "`", '"', "a(",
        "at ", 'File "', "$", "<", "a=", "\t", "\n", "é", "a::"]
TAILS = ["", "[", "!", " ", "(", "\n", "'", "x", ".", "/", "[ATCG]{2}C", ":", "\ud800"]


def patterns() -> dict[str, object]:
    found: dict[str, object] = {}
    for module_name in USER_TEXT_MODULES:
        for name, value in vars(importlib.import_module(module_name)).items():
            if isinstance(value, (re.Pattern, linear_regex.LinearPattern)):
                found[f"{module_name}.{name}"] = value
            elif isinstance(value, (list, tuple)):
                for i, item in enumerate(value):
                    for leaf in item if isinstance(item, tuple) else (item,):
                        if isinstance(leaf, (re.Pattern, linear_regex.LinearPattern)):
                            found[f"{module_name}.{name}[{i}]"] = leaf
    return found


def _time_each(texts: list[str], queue) -> None:
    """In a child process: each pattern's worst time over `texts`, reported as soon as it is known."""
    for name, pattern in patterns().items():
        queue.put((name, None))  # started: if the parent's clock runs out, this one hung
        worst = 0.0
        for text in texts:
            started = time.perf_counter()
            pattern.search(text)
            pattern.findall(text)
            pattern.fullmatch(text)
            worst = max(worst, time.perf_counter() - started)
        queue.put((name, worst))


def worst_times(texts: list[str]) -> dict[str, float]:
    """{pattern: worst seconds over `texts`}, measured in a child (a backtracking `re` holds the GIL and
    cannot be interrupted); one still running when its clock ends counts as infinite."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_time_each, args=(texts, queue), daemon=True)
    child.start()
    times: dict[str, float | None] = {}
    clock = time.monotonic()
    expected = len(patterns())
    while len([s for s in times.values() if s is not None]) < expected:
        try:
            name, seconds = queue.get(timeout=0.2)
        except queue_module.Empty:
            if time.monotonic() - clock > LIMIT_S * len(texts) + CHILD_SLACK_S:
                break
            continue
        times[name] = seconds
        clock = time.monotonic()
    child.kill()
    child.join()
    return {name: float("inf") if seconds is None else seconds for name, seconds in times.items()}


def test_every_user_text_pattern_is_linear_by_construction():
    """RE2 (no backtracking) for each, unless its `re` shape is on the short list above."""
    on_re = {name for name, p in patterns().items() if isinstance(p, re.Pattern)}
    assert on_re == STAYS_ON_RE


def test_the_old_camel_case_pattern_is_what_this_guards_against():
    """The analyzer's old identifier test, on a thread of its own: 26 capitals and a `[` already take seconds."""
    old = re.compile(r"^_?[A-Za-z][a-z0-9]*(?:[A-Z]+[a-z0-9]*)+$")
    new = linear_regex.compile(old.pattern)
    text = DNA[:22] + "["
    started = time.perf_counter()
    assert new.match(text) is None
    linear_s = time.perf_counter() - started
    started = time.perf_counter()
    assert old.match(text) is None
    backtracking_s = time.perf_counter() - started
    assert backtracking_s > 20 * linear_s


def pathological_text(run: str, tail: str, chars: int) -> str:
    return (run * (chars // len(run) + 1))[: max(0, chars - len(tail))] + tail


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run=st.sampled_from(RUNS), other=st.sampled_from(RUNS), tail=st.sampled_from(TAILS),
       chars=st.integers(min_value=1, max_value=MAX_CHARS))
@example(run="A", other="C", tail="[ATCG]{2}C", chars=MAX_CHARS)
@example(run="a.", other="a/", tail="[", chars=MAX_CHARS)
def test_pathological_tokens_cost_each_pattern_under_a_second(run, other, tail, chars):
    texts = [pathological_text(run, tail, chars), pathological_text(run + other, tail, chars), DNA]
    times = worst_times(texts)
    slow = {name: times.get(name, float("inf")) for name in patterns() if times.get(name, float("inf")) > LIMIT_S}
    assert slow == {}  # the first infinite one hung; those after it never ran


def test_word_classes_and_surrogates_read_as_in_python():
    pattern = linear_regex.compile(r"[A-Za-z_]\w*")
    assert pattern.findall("café_au lait naïve") == ["café_au", "lait", "naïve"]
    assert pattern.findall("a\ud800b") == ["a", "b"]  # a lone surrogate splits words, and raises nothing
    assert linear_regex.compile(r"[\w.-]+").fullmatch("ü.b-c") is not None
    with pytest.raises(ValueError, match="not a linear-time pattern"):
        linear_regex.compile(r"(a)\1")

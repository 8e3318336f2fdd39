"""Function spans parsed from several threads at once (concurrent builds): each parse gives the spans a lone parse
gives. CPython 3.11.7's AST constructor counts recursion per interpreter, so a thread switch inside a parse (here
provoked by finalizers the collector runs mid-parse) can fail another thread's parse with SystemError; the lock of
semantica.runtime.threadsafe_ast prevents it (tests/semantica/runtime/test_threadsafe_ast.py forces the interleaving)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

from semantica.languages.spans import function_spans

SOURCE = (Path(__file__).resolve().parents[2] / "semantica" / "stores" / "localizer" / "features.py").read_text()
THREADS, PARSES, GARBAGE = 4, 150, 50


class Cycle:
    """Garbage only the cycle collector frees; its finalizer runs Python code, where the GIL can change hands."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        time.sleep(0)


def test_concurrent_parses_give_the_lone_parse_spans():
    expected = function_spans(SOURCE)
    assert len(expected) > 10
    failures: list[BaseException | int] = []

    def parse() -> None:
        for _ in range(PARSES):
            for _ in range(GARBAGE):
                Cycle()
            try:
                spans = function_spans(SOURCE)
            except BaseException as exc:  # noqa: BLE001 - reported below
                failures.append(exc)
                continue
            if spans != expected:
                failures.append(len(spans))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=parse) for _ in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(300)
    finally:
        sys.setswitchinterval(interval)
    assert failures == []

"""The AST constructor's thread race, forced: a finalizer that runs inside one thread's `ast.parse` waits for a
second thread's parse. On the affected CPython releases that interleaving raised SystemError (the concurrent-build
failure); with `semantica` imported it must not."""

from __future__ import annotations

import ast
import builtins
import gc
import sys
import threading

import numpy as np
import pytest

import semantica  # noqa: F401 - importing the package installs the guard
from semantica.runtime.threadsafe_ast import PARSE_LOCK, install, needs_guard

SOURCE = "\n".join(f"def f{i}(x):\n    return [x + {i} for _ in range(3)]" for i in range(50))
SECOND_PARSE_WAIT_S = 1.0
JOIN_S = 30.0


@pytest.mark.parametrize(("version", "affected"), [
    ((3, 10, 13), False), ((3, 11, 0), True), ((3, 11, 7), True), ((3, 11, 8), False), ((3, 11, 14), False),
    ((3, 12, 1), True), ((3, 12, 2), False), ((3, 13, 0), False)])
def test_only_the_releases_without_the_fix_are_guarded(version, affected):
    assert needs_guard(version) is affected


def test_the_guard_is_installed_once_where_needed():
    installed = install()
    assert installed is needs_guard(tuple(sys.version_info[:3]))
    assert install() is installed  # a second install does not wrap twice
    if installed:
        assert getattr(ast.parse, "one_at_a_time", False)
        assert not getattr(ast.parse.__wrapped__, "one_at_a_time", False)


class ParsesInsideFinalizer:
    """Cyclic garbage whose finalizer, run by a collection inside thread A's parse, lets thread B parse."""

    def __init__(self, start_second: threading.Event, second_done: threading.Event, inside: list[bool]) -> None:
        self.cycle = self
        self.start_second, self.second_done, self.inside = start_second, second_done, inside
        self.fired_inside: list[bool] = []

    def __del__(self) -> None:
        self.fired_inside.append(bool(self.inside))
        self.start_second.set()
        self.second_done.wait(SECOND_PARSE_WAIT_S)  # releases the GIL: B parses now, or (guarded) after A


def test_a_parse_interleaved_by_another_threads_parse_raises_nothing(monkeypatch):
    start_second, second_done = threading.Event(), threading.Event()
    inside_first_compile: list[bool] = []
    errors: list[BaseException] = []
    trees: dict[str, ast.AST] = {}

    def compile_collecting_in_first(source, filename, mode, flags, _feature_version=-1):
        """What `ast.parse` calls, inside the guard: in thread A the next tracked allocation collects, and the
        first one is the AST constructor's first node."""
        if threading.current_thread().name != "first":
            return builtins.compile(source, filename, mode, flags, _feature_version=_feature_version)
        inside_first_compile.append(True)
        gc.set_threshold(1)
        try:
            return builtins.compile(source, filename, mode, flags, _feature_version=_feature_version)
        finally:
            inside_first_compile.clear()

    def first() -> None:
        try:
            trees["first"] = ast.parse(SOURCE)
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)

    def second() -> None:
        start_second.wait(JOIN_S)
        try:
            trees["second"] = ast.parse(SOURCE)
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)
        finally:
            second_done.set()

    thresholds = gc.get_threshold()
    gc.collect()
    garbage = ParsesInsideFinalizer(start_second, second_done, inside_first_compile)  # young: gen 0 holds it
    fired_inside = garbage.fired_inside
    del garbage  # unreachable now, collected only by the collection inside A's compile
    monkeypatch.setattr(ast, "compile", compile_collecting_in_first, raising=False)
    threads = [threading.Thread(target=second, name="second"), threading.Thread(target=first, name="first")]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(JOIN_S)
    finally:
        gc.set_threshold(*thresholds)
    assert fired_inside == [True], "the finalizer did not run inside A's parse: the interleaving was not forced"
    assert errors == []
    assert set(trees) == {"first", "second"}
    assert len(trees["first"].body) == len(trees["second"].body) == len(SOURCE.split("def ")) - 1


def test_numpy_headers_are_parsed_under_the_lock_where_guarded(tmp_path, monkeypatch):
    """numpy reads a `.npy` header with `ast.literal_eval`, so `np.load` in threads takes the lock."""
    path = tmp_path / "rows.npy"
    np.save(path, np.arange(6, dtype=np.int64))
    held: list[bool] = []

    def compile_recording_the_lock(*args, **kwargs):
        held.append(PARSE_LOCK._is_owned())  # noqa: SLF001 - the owner check, read-only
        return builtins.compile(*args, **kwargs)

    monkeypatch.setattr(ast, "compile", compile_recording_the_lock, raising=False)  # what ast.parse calls
    assert np.load(path).tolist() == list(range(6))
    assert held == [needs_guard(tuple(sys.version_info[:3]))]

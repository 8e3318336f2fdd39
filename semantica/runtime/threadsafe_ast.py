"""One `ast.parse` at a time on the CPython releases whose AST constructor races between threads.

CPython before 3.11.8 and 3.12.2 counts the AST constructor's recursion in one per-interpreter field
(python/cpython#106905): when a garbage collection inside one thread's `ast.parse` runs a finalizer and another
thread parses meanwhile, the first fails with "SystemError: AST constructor recursion depth mismatch". Third-party
code parses too: numpy reads every `.npy` header with `ast.literal_eval`, so concurrent builds and replicas that
`np.load` in threads hit it. On those releases, importing `semantica` replaces `ast.parse` (which `literal_eval`
calls) with one that holds a process-wide re-entrant lock; parsing holds the GIL anyway, so the lock costs no
throughput. Fixed releases are left alone.
"""

from __future__ import annotations

import ast
import functools
import sys
import threading
from collections.abc import Callable
from typing import Any

# the first patch release of each affected minor version that carries the fix (python/cpython#113476, #113472)
FIXED_PATCH: dict[tuple[int, int], int] = {(3, 11): 8, (3, 12): 2}
FIRST_UNAFFECTED_MINOR = (3, 13)
FIRST_AFFECTED_MINOR = (3, 11)  # the per-interpreter counter came with python/cpython#95185

PARSE_LOCK = threading.RLock()


def needs_guard(version: tuple[int, int, int]) -> bool:
    """Whether this CPython release has the racing AST constructor."""
    minor = version[:2]
    if minor < FIRST_AFFECTED_MINOR or minor >= FIRST_UNAFFECTED_MINOR:
        return False
    return version[2] < FIXED_PATCH[minor]


def guarded(parse: Callable[..., Any]) -> Callable[..., Any]:
    """`parse` under the process-wide lock (re-entrant: a finalizer that parses in the same thread proceeds)."""
    @functools.wraps(parse)
    def parse_one_at_a_time(*args: Any, **kwargs: Any) -> Any:
        with PARSE_LOCK:
            return parse(*args, **kwargs)

    parse_one_at_a_time.one_at_a_time = True  # type: ignore[attr-defined]
    return parse_one_at_a_time


def install() -> bool:
    """Guard `ast.parse` once on an affected CPython; True when the guard is in place."""
    if sys.implementation.name != "cpython" or not needs_guard(tuple(sys.version_info[:3])):
        return False
    if not getattr(ast.parse, "one_at_a_time", False):
        ast.parse = guarded(ast.parse)
    return True

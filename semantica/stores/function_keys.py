"""The key of a function everywhere one is named (the localizer, the benchmarks' gold): `path::Qualified.name`
(a file's key is its path)."""

from __future__ import annotations

FUNCTION_SEPARATOR = "::"


def function_key(path: str, qualname: str) -> str:
    """`path::Qualified.name`: a function's id, the localizer's and the benchmark's key."""
    return f"{path}{FUNCTION_SEPARATOR}{qualname}"

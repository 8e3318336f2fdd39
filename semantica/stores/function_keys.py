"""The key of a file or a function everywhere one is named (the localizer, history, the benchmarks' gold):
`path::Qualified.name` for a function, the path alone for a file."""

from __future__ import annotations

FUNCTION_SEPARATOR = "::"


def function_key(path: str, qualname: str) -> str:
    """`path::Qualified.name`: a function's id, the localizer's and the benchmark's key."""
    return f"{path}{FUNCTION_SEPARATOR}{qualname}"


def path_of_key(key: str) -> str:
    """The file path of a file or function key."""
    return key.split(FUNCTION_SEPARATOR, 1)[0]

"""Repository name -> index directory: the one check and the one reversible, collision-free mapping.

`semantica.layout` maps names to directories with these; see its docstring for the layout and the old mapping.
"""

from __future__ import annotations

import unicodedata

from semantica.errors import ErrorKind


class RepoNameError(ValueError):
    """A repository name that cannot name an index directory (HTTP 422); the message says why."""

    error_kind = ErrorKind.INVALID


_NAME_SEPARATOR = "/"
_DIR_SEPARATOR = "+"
_ESCAPE = "%"
_ESCAPED = {"%": "%25", "+": "%2B"}
_CONTROL_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})  # controls, lone surrogates, line/paragraph separators
_NAME_MAX_BYTES = 255  # NAME_MAX of Linux file systems: one directory level


def normalize_repo_name(repo: object) -> str:
    """The canonical form of a repository name, or RepoNameError saying why there is none."""
    if not isinstance(repo, str):
        raise RepoNameError(f"repository name must be a string, got {type(repo).__name__}")
    text = unicodedata.normalize("NFC", repo)
    bad = next((ch for ch in text if unicodedata.category(ch) in _CONTROL_CATEGORIES), None)
    if bad is not None:
        raise RepoNameError(f"repository name {repo!r} holds a control character {bad!r}; use printable characters")
    segments = [part.strip() for part in text.split(_NAME_SEPARATOR)]
    if any(part in (".", "..") for part in segments):
        raise RepoNameError(f"repository name {repo!r} has a '.' or '..' segment; use owner/name")
    name = _NAME_SEPARATOR.join(part for part in segments if part)
    if not name:
        raise RepoNameError(f"repository name {repo!r} is empty after normalisation; use owner/name")
    if len(_encode(name).encode("utf-8")) > _NAME_MAX_BYTES:
        raise RepoNameError(f"repository name {name[:40]!r}... is too long for a directory name "
                            f"(over {_NAME_MAX_BYTES} bytes once encoded)")
    return name


def _encode(name: str) -> str:
    return "".join(_ESCAPED.get(ch, _DIR_SEPARATOR if ch == _NAME_SEPARATOR else ch) for ch in name)


def repo_dir_name(repo: str) -> str:
    """`owner/name` -> `owner+name`, `a+b` -> `a%2Bb`: one directory level, reversible, collision-free."""
    return _encode(normalize_repo_name(repo))


def repo_from_dir_name(name: str) -> str:
    """The repository a directory name encodes; RepoNameError when it is no name's encoding."""
    out: list[str] = []
    i = 0
    while i < len(name):
        ch = name[i]
        if ch == _DIR_SEPARATOR:
            out.append(_NAME_SEPARATOR)
        elif ch == _ESCAPE:
            code = name[i + 1:i + 3]
            if len(code) != 2 or not all(c in "0123456789abcdefABCDEF" for c in code):
                raise RepoNameError(f"directory name {name!r} is not an encoded repository name")
            out.append(chr(int(code, 16)))
            i += 2
        else:
            out.append(ch)
        i += 1
    repo = "".join(out)
    if repo_dir_name(repo) != name:
        raise RepoNameError(f"directory name {name!r} is not the canonical encoding of {repo!r}")
    return repo


def legacy_repo_dir_name(repo: str) -> str:
    """The directory the old mapping (`/` -> `+` only, not reversible) gave `repo`."""
    return normalize_repo_name(repo).replace(_NAME_SEPARATOR, _DIR_SEPARATOR)

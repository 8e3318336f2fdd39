"""`tsconfig.json` path aliases: `compilerOptions.paths` and `baseUrl` of the nearest tsconfig above a file.

As the TypeScript compiler reads them: `paths` patterns hold at most one `*`; the pattern with the longest
prefix before its `*` wins, and each of its targets is tried in order; targets are relative to `baseUrl`
when set, else to the tsconfig's own directory; a bare specifier also resolves under `baseUrl`. A relative
`extends` is followed (its options are the defaults the extending file overrides); a package's (`extends:
"@tsconfig/node18"`) is not in the repository and adds nothing. tsconfig files are JSON with comments and
trailing commas, read with `json5`.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

import json5

from pipelines.parse.families.base import RepoFiles

TSCONFIG = "tsconfig.json"
MAX_EXTENDS = 8  # an `extends` chain longer than this is a cycle
_MEMO = "js:tsconfig"


@dataclass(frozen=True)
class PathAliases:
    """One tsconfig's aliases, with repository-relative directories."""

    base_url: str | None = None  # the directory bare specifiers resolve under; None when unset
    patterns: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (pattern, targets joined to their base)


def _read(repo: RepoFiles, path: str) -> dict[str, Any]:
    try:
        data = json5.loads(repo.text_of(path) or "{}")
    except ValueError:  # a broken tsconfig resolves nothing (the compiler would refuse it too)
        return {}
    return data if isinstance(data, dict) else {}


def _load(repo: RepoFiles, path: str, depth: int = 0) -> PathAliases:
    data = _read(repo, path)
    directory = posixpath.dirname(path)
    inherited = PathAliases()
    parent = data.get("extends")
    if isinstance(parent, str) and parent.startswith(".") and depth < MAX_EXTENDS:
        target = posixpath.normpath(posixpath.join(directory, parent))
        target = target if target.endswith(".json") else target + ".json"
        if target in repo.paths and target != path:
            inherited = _load(repo, target, depth + 1)
    options = data.get("compilerOptions")
    options = options if isinstance(options, dict) else {}
    base_url = inherited.base_url
    if isinstance(options.get("baseUrl"), str):
        base_url = posixpath.normpath(posixpath.join(directory, options["baseUrl"]))
    patterns = inherited.patterns
    if isinstance(options.get("paths"), dict):
        root = base_url if base_url is not None else directory
        patterns = tuple(
            (pattern, tuple(posixpath.normpath(posixpath.join(root, t)) for t in targets if isinstance(t, str)))
            for pattern, targets in options["paths"].items() if isinstance(targets, list))
    return PathAliases(base_url, patterns)


def aliases_for(repo: RepoFiles, path: str) -> PathAliases:
    """The aliases of the nearest tsconfig.json in `path`'s directory or above (none: no aliases)."""
    memo: dict[str, PathAliases] = repo.memo.setdefault(_MEMO, {})
    directory = posixpath.dirname(path)
    climbed = []
    while directory not in memo:
        climbed.append(directory)
        config = posixpath.join(directory, TSCONFIG) if directory else TSCONFIG
        if config in repo.paths:
            memo[directory] = _load(repo, config)
            break
        if not directory:
            memo[directory] = PathAliases()
            break
        directory = posixpath.dirname(directory)
    for d in climbed:
        memo[d] = memo[directory]
    return memo[directory]


def _matches(pattern: str, specifier: str) -> str | None:
    """What `*` stands for when `specifier` matches `pattern` ("" for an exact pattern), else None."""
    if "*" not in pattern:
        return "" if pattern == specifier else None
    prefix, suffix = pattern.split("*", 1)
    if len(specifier) >= len(prefix) + len(suffix) and specifier.startswith(prefix) and specifier.endswith(suffix):
        return specifier[len(prefix): len(specifier) - len(suffix)]
    return None


def candidates(repo: RepoFiles, path: str, specifier: str) -> list[str]:
    """Repository paths (before suffix and index resolution) a bare specifier may name, best first."""
    aliases = aliases_for(repo, path)
    matched = [(pattern, star, targets) for pattern, targets in aliases.patterns
               if (star := _matches(pattern, specifier)) is not None]
    matched.sort(key=lambda m: ("*" in m[0], -len(m[0].split("*", 1)[0])))  # exact, then longest prefix
    found = [t.replace("*", star) for _, star, targets in matched for t in targets]
    if aliases.base_url is not None:
        found.append(posixpath.normpath(posixpath.join(aliases.base_url, specifier)))
    return found

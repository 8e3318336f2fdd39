"""What one language family module exports: the node types of its languages, import extraction (one
tree-sitter import node -> RawImports) and import resolution (a RawImport -> the repository files it names)."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pipelines.parse.facts import ParsedFile, RawImport
from pipelines.parse.languages import LanguageSpec


class RepoFiles(Protocol):
    """The view of one repository a family resolves imports against (`pipelines.parse.resolution`)."""

    paths: set[str]  # every parsed file, repository-relative
    memo: dict[str, Any]  # per-resolution indexes a family builds once (keyed by the family's own names)

    def family_of(self, path: str) -> str: ...

    def text_of(self, path: str) -> str:
        """A parsed file's text, rebuilt from its chunks (e.g. go.mod's module line)."""
        ...

    def files_in(self, directory: str) -> list[str]:
        """Files directly in `directory` ("" = the root), sorted."""
        ...


ImportExtractor = Callable[[Any, int], list[RawImport]]
ImportResolver = Callable[[RepoFiles, str, RawImport], list[str]]
FactExtractor = Callable[[Any, ParsedFile], None]  # (tree root, the file's facts so far): adds family facts


_FILES_BY_NAME = "base:files_by_name"  # memo: file name -> the repository paths with that name


def files_named(repo: RepoFiles, name: str) -> list[str]:
    """The repository paths whose file name is `name`, from an index built once per resolution: a family that
    resolves an import by its path's tail looks the name up instead of scanning every path per import (which is
    quadratic in a large repository's files)."""
    index = repo.memo.get(_FILES_BY_NAME)
    if index is None:
        index = repo.memo[_FILES_BY_NAME] = {}
        for path in repo.paths:
            index.setdefault(posixpath.basename(path), []).append(path)
    return index.get(name, [])


def no_resolution(repo: RepoFiles, path: str, imp: RawImport) -> list[str]:
    """A family whose imports are kept by name only (unresolved edges)."""
    return []


@dataclass(frozen=True)
class Family:
    """One family: its languages' specs by grammar, import extraction and resolution."""

    name: str
    spec: LanguageSpec
    imports: ImportExtractor
    resolve_import: ImportResolver = no_resolution
    grammar_specs: Mapping[str, LanguageSpec] = field(default_factory=dict)  # a grammar that differs
    version: str = "1"  # part of the parse cache key: bump when this family's output changes
    facts: FactExtractor | None = None  # family-only facts read from the tree (Go: method sets)

    def spec_for(self, grammar: str) -> LanguageSpec:
        return self.grammar_specs.get(grammar, self.spec)

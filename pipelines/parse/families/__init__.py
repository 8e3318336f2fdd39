"""Language families: one module each (node types, import extraction, import resolution) and the registry
the parser and the resolver look them up in. A language row (`semantica/languages/table.py`) names its
family; a new family is one module plus one `register_family` line here."""

from __future__ import annotations

from pipelines.parse.families import c, go, java, js, python, rust
from pipelines.parse.families.base import Family, RepoFiles
from pipelines.parse.languages import LanguageSpec
from semantica.languages import language_row

FAMILIES: dict[str, Family] = {}


def register_family(family: Family) -> Family:
    FAMILIES[family.name] = family
    return family


def unregister_family(name: str) -> None:
    FAMILIES.pop(name, None)


def family_of_language(language: str) -> Family | None:
    """The family that parses `language`, or None (not parsed: windows, or doc sections)."""
    row = language_row(language)
    if row is None or not row.grammar:
        return None
    return FAMILIES.get(row.family)


def spec_of(language: str) -> LanguageSpec | None:
    """The node types of `language`, or None when it is not parsed by tree-sitter."""
    row = language_row(language)
    family = family_of_language(language)
    return family.spec_for(row.grammar) if family is not None and row is not None else None


def grammar_of(language: str) -> str:
    row = language_row(language)
    return row.grammar if row is not None else ""


for _module in (python, js, go, java, rust, c):
    register_family(_module.FAMILY)

__all__ = ["FAMILIES", "Family", "RepoFiles", "family_of_language", "grammar_of", "register_family", "spec_of",
           "unregister_family"]

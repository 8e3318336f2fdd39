"""What the parser knows of a language: `LanguageSpec` (which tree-sitter node types define what) and the
per-process grammar cache. Each family module (`pipelines/parse/families/`) holds its languages' specs; the
language table (`semantica/languages/table.py`) names each language's grammar and family.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

COMMENT_TYPES = frozenset({"comment", "line_comment", "block_comment"})


@dataclass(frozen=True)
class LanguageSpec:
    """Which tree-sitter node types define what, per language (no logic, just names)."""

    family: str
    functions: frozenset[str]
    classes: frozenset[str]
    namespaces: frozenset[str] = frozenset()
    descend: frozenset[str] = frozenset()
    imports: frozenset[str] = frozenset()
    call_query: str = ""
    import_scopes: frozenset[str] = frozenset()  # nodes whose bodies may hold imports too (Python: any block)
    function_values: frozenset[str] = frozenset()  # `const f = <value>` defines a function (JavaScript)
    receiver_methods: bool = False  # methods name their type in a receiver, outside it (Go)
    typed_calls: bool = False  # calls, references and types resolved precisely (Python's own resolver)
    type_refs: str = ""  # a query whose `@type` captures are type names used (Go: parameter, field, result types)
    builtin_types: frozenset[str] = frozenset()  # type names no repository defines (Go: `string`, `error`)
    attached: frozenset[str] = frozenset()  # non-comment nodes above a definition that belong to it (`#[attr]`)


DOC_LANGUAGES = frozenset({"markdown", "rst"})

_PARSERS: dict[str, Any] = {}
_QUERIES: dict[str, Any] = {}


def parser_and_query(grammar: str, spec: LanguageSpec) -> tuple[Any, Any]:
    """Per-process cache: grammars load once, and FileParser itself stays cheap to pickle."""
    if grammar not in _PARSERS:
        from tree_sitter import Query
        from tree_sitter_language_pack import get_language, get_parser

        _PARSERS[grammar] = get_parser(grammar)
        _QUERIES[grammar] = Query(get_language(grammar), spec.call_query)
    return _PARSERS[grammar], _QUERIES[grammar]



def type_refs_query(grammar: str, spec: LanguageSpec) -> Any:
    """The family's type-position query for `grammar` (cached per process); None when it has none."""
    if not spec.type_refs:
        return None
    key = f"{grammar}:types"
    if key not in _QUERIES:
        from tree_sitter import Query
        from tree_sitter_language_pack import get_language

        _QUERIES[key] = Query(get_language(grammar), spec.type_refs)
    return _QUERIES[key]


def python_refs_query() -> Any:
    """The identifier query used for Python references (cached per process)."""
    if "python:refs" not in _QUERIES:
        from tree_sitter import Query
        from tree_sitter_language_pack import get_language

        _QUERIES["python:refs"] = Query(get_language("python"), "(identifier) @id")
    return _QUERIES["python:refs"]


PYTHON_BINDING_NODES = ("assignment", "for_statement", "for_in_clause", "as_pattern", "named_expression",
                        "function_definition", "class_definition", "return_statement")


def python_bindings_query() -> Any:
    """Python calls (`@call`) and the nodes type inference reads (`@n`: bindings, nested definitions,
    returns): one query per file."""
    if "python:bindings" not in _QUERIES:
        from tree_sitter import Query
        from tree_sitter_language_pack import get_language

        patterns = " ".join(f"({t}) @n" for t in PYTHON_BINDING_NODES)
        _QUERIES["python:bindings"] = Query(get_language("python"), f"(call) @call {patterns}")
    return _QUERIES["python:bindings"]

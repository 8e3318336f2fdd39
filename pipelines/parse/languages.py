"""The language table of the parser: which tree-sitter node types define what, per language.

Only names and the per-process grammar cache live here; extraction logic is in `extract.py` and
the per-language modules (`python.py`, `javascript.py`, `go.py`, `java.py`, `rust.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

COMMENT_TYPES = frozenset({"comment", "line_comment", "block_comment"})
JS_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})


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


_JS_DESCEND = frozenset({"export_statement", "expression_statement", "ambient_declaration"})
_JS_CALLS = "(call_expression) @call (new_expression) @call"
SPECS: dict[str, LanguageSpec] = {
    "python": LanguageSpec(
        family="python",
        functions=frozenset({"function_definition"}),
        classes=frozenset({"class_definition"}),
        descend=frozenset({
            "if_statement", "elif_clause", "else_clause", "try_statement", "except_clause",
            "except_group_clause", "finally_clause", "with_statement", "for_statement",
            "while_statement", "block",
        }),
        imports=frozenset({"import_statement", "import_from_statement"}),
        call_query="(call) @call",
    ),
    "javascript": LanguageSpec(
        family="js",
        functions=frozenset({"function_declaration", "generator_function_declaration", "method_definition"}),
        classes=frozenset({"class_declaration"}),
        descend=_JS_DESCEND,
        imports=frozenset({"import_statement"}),
        call_query=_JS_CALLS,
    ),
    "typescript": LanguageSpec(
        family="js",
        functions=frozenset({"function_declaration", "generator_function_declaration", "method_definition"}),
        classes=frozenset({"class_declaration", "abstract_class_declaration", "interface_declaration"}),
        namespaces=frozenset({"internal_module", "module"}),
        descend=_JS_DESCEND,
        imports=frozenset({"import_statement"}),
        call_query=_JS_CALLS,
    ),
    "go": LanguageSpec(
        family="go",
        functions=frozenset({"function_declaration", "method_declaration"}),
        classes=frozenset({"type_spec"}),
        descend=frozenset({"type_declaration"}),
        imports=frozenset({"import_declaration"}),
        call_query="(call_expression) @call",
    ),
    "java": LanguageSpec(
        family="java",
        functions=frozenset({"method_declaration", "constructor_declaration"}),
        classes=frozenset({
            "class_declaration", "interface_declaration", "enum_declaration", "record_declaration",
            "annotation_type_declaration",
        }),
        descend=frozenset({"enum_body_declarations"}),
        imports=frozenset({"import_declaration"}),
        call_query="(method_invocation) @call (object_creation_expression) @call",
    ),
    "rust": LanguageSpec(
        family="rust",
        functions=frozenset({"function_item"}),
        classes=frozenset({"struct_item", "enum_item", "trait_item", "union_item"}),
        namespaces=frozenset({"impl_item", "mod_item"}),
        imports=frozenset({"use_declaration"}),
        call_query="(call_expression) @call",
    ),
}
SPECS["tsx"] = SPECS["typescript"]
DOC_LANGUAGES = frozenset({"markdown", "rst"})

_PARSERS: dict[str, Any] = {}
_QUERIES: dict[str, Any] = {}


def parser_and_query(language: str) -> tuple[Any, Any]:
    """Per-process cache: grammars load once, and FileParser itself stays cheap to pickle."""
    if language not in _PARSERS:
        from tree_sitter import Query
        from tree_sitter_language_pack import get_language, get_parser

        _PARSERS[language] = get_parser(language)
        _QUERIES[language] = Query(get_language(language), SPECS[language].call_query)
    return _PARSERS[language], _QUERIES[language]



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

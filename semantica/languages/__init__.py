"""Languages: the one table (`table.py`) and its registry (`registry.py`). Import extraction and resolution
live per family in `pipelines/parse/families/` (they work on tree-sitter nodes and parse facts)."""

from semantica.languages.registry import (
    KNOWN_LANGUAGES,
    LANGUAGE_BY_NAME,
    LANGUAGE_BY_SUFFIX,
    is_test_path,
    language_of,
    language_row,
    parsed_languages,
    register_language,
    unregister_language,
)
from semantica.languages.table import DEFAULT_TEST_PATH, LANGUAGES, Language

__all__ = [
    "DEFAULT_TEST_PATH", "KNOWN_LANGUAGES", "LANGUAGES", "LANGUAGE_BY_NAME", "LANGUAGE_BY_SUFFIX",
    "Language", "is_test_path", "language_of", "language_row", "parsed_languages", "register_language",
    "unregister_language",
]

"""The registry over the language table: lookups by suffix, file name and name, and `register_language`
(a new language is one row; the lookups below are updated in place, so importers see it)."""

from __future__ import annotations

from pathlib import PurePosixPath

from semantica.languages.table import DEFAULT_TEST_PATH, LANGUAGES, Language

LANGUAGE_BY_SUFFIX: dict[str, str] = {}
LANGUAGE_BY_NAME: dict[str, str] = {}
ROWS: dict[str, Language] = {}
KNOWN_LANGUAGES: set[str] = set()  # the names a query filter accepts (the HTTP contract's enum)


def register_language(row: Language) -> Language:
    """Add (or replace) one language row; its suffixes and file names then map to it."""
    old = ROWS.get(row.name)
    if old is not None:
        unregister_language(old.name)
    ROWS[row.name] = row
    for suffix in row.suffixes:
        LANGUAGE_BY_SUFFIX[suffix] = row.name
    for filename in row.filenames:
        LANGUAGE_BY_NAME[filename] = row.name
    KNOWN_LANGUAGES.add(row.name)
    return row


def unregister_language(name: str) -> None:
    """Remove a row (a test's toy language)."""
    row = ROWS.pop(name, None)
    if row is None:
        return
    for table in (LANGUAGE_BY_SUFFIX, LANGUAGE_BY_NAME):
        for key in [k for k, v in table.items() if v == name]:
            del table[key]
    KNOWN_LANGUAGES.discard(name)


def language_row(name: str) -> Language | None:
    return ROWS.get(name)


def language_of(path: str) -> str:
    """Language name from the file name, or "" when unknown."""
    name = path.rpartition("/")[2]
    if name in ("", ".", ".."):  # a path ending in a separator or a dot segment: let pathlib normalise it
        name = PurePosixPath(path).name
    if name in LANGUAGE_BY_NAME:
        return LANGUAGE_BY_NAME[name]
    lower = name.lower()
    dot = lower.rfind(".")
    return LANGUAGE_BY_SUFFIX.get(lower[dot:], "") if dot > 0 else ""


def is_test_path(path: str) -> bool:
    """Whether `path` (repository-relative, `/`-separated) is test code, by its language's rule (the
    default rule for files of no known language)."""
    row = ROWS.get(language_of(path))
    rule = row.test_path if row is not None else DEFAULT_TEST_PATH
    return bool(rule.search(path))


def parsed_languages() -> dict[str, Language]:
    """Rows with a tree-sitter grammar and a family, by language name."""
    return {name: row for name, row in ROWS.items() if row.grammar and row.family}


for _row in LANGUAGES:
    register_language(_row)

"""The language table: file suffix or name -> language (what discovery indexes, what a query may filter on),
and the test-path rule (which files are tests: damped by the graph walk and localization, an LTR feature)."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

LANGUAGE_BY_SUFFIX: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".java": "java", ".rs": "rust",
    ".md": "markdown", ".markdown": "markdown", ".rst": "rst", ".txt": "text",
    ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp",
    ".rb": "ruby", ".php": "php", ".cs": "csharp", ".kt": "kotlin", ".scala": "scala",
    ".swift": "swift", ".sql": "sql", ".proto": "proto",
    ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".json": "json", ".cfg": "ini", ".ini": "ini",
    ".sh": "shell", ".bash": "shell",
}
LANGUAGE_BY_NAME: dict[str, str] = {
    "Makefile": "make", "Dockerfile": "dockerfile", "README": "text",
}

# test directories, test_*.py / *_test.<ext> files, conftest.py (Python, Go, Rust and most others)
TEST_PATH = re.compile(r"(^|/)(tests?|testing|mocks?)(/|_)|(^|/)test_[^/]*$|_test\.[a-z]+$|(^|/)conftest\.py$")

KNOWN_LANGUAGES: frozenset[str] = frozenset(LANGUAGE_BY_SUFFIX.values()) | frozenset(LANGUAGE_BY_NAME.values())


def language_of(path: str) -> str:
    """Language name from the file name, or "" when unknown."""
    name = PurePosixPath(path).name
    if name in LANGUAGE_BY_NAME:
        return LANGUAGE_BY_NAME[name]
    lower = name.lower()
    dot = lower.rfind(".")
    return LANGUAGE_BY_SUFFIX.get(lower[dot:], "") if dot > 0 else ""


def is_test_path(path: str) -> bool:
    """Whether `path` (repository-relative, `/`-separated) is test code."""
    return bool(TEST_PATH.search(path))

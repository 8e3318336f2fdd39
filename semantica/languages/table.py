"""THE language table: one row per language (file suffixes and names, tree-sitter grammar, family, test-path
rule). Discovery, query filters, the parser and the test-path rule all read it; nothing else lists languages.

A row with a `grammar` is parsed by tree-sitter (definitions become chunks and symbols) with the node types
and import extraction/resolution of its `family` (a module under `pipelines/parse/families/`); a row without
one is chunked by sliding windows (or by headings for the doc languages).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# test directories, test_*.py / *_test.<ext> files, conftest.py (Python, Go, Rust and most others)
DEFAULT_TEST_PATH = re.compile(r"(^|/)(tests?|testing|mocks?)(/|_)|(^|/)test_[^/]*$|_test\.[a-z]+$|(^|/)conftest\.py$")
# JavaScript and TypeScript also keep tests beside the code: `x.test.ts`, `x.spec.js`, `__tests__/`, `__mocks__/`
JS_TEST_PATH = re.compile(DEFAULT_TEST_PATH.pattern + r"|(^|/)__(tests|mocks)__/|\.(test|spec)\.[cm]?[jt]sx?$")


@dataclass(frozen=True)
class Language:
    """One language: how its files are named, how they are parsed and which of them are tests."""

    name: str
    suffixes: tuple[str, ...] = ()
    filenames: tuple[str, ...] = ()
    grammar: str = ""  # tree-sitter grammar (tree-sitter-language-pack name); "" = not parsed
    family: str = ""  # the family module that gives node types and import extraction/resolution
    test_path: re.Pattern[str] = DEFAULT_TEST_PATH
    glued_file_names: bool = False  # its convention glues a file name's words (`tracinghandler.go`): split them


LANGUAGES: tuple[Language, ...] = (
    Language("python", (".py", ".pyi"), grammar="python", family="python"),
    Language("javascript", (".js", ".mjs", ".cjs", ".jsx"), grammar="javascript", family="js", test_path=JS_TEST_PATH),
    Language("typescript", (".ts", ".mts", ".cts"), grammar="typescript", family="js", test_path=JS_TEST_PATH),
    Language("tsx", (".tsx",), grammar="tsx", family="js", test_path=JS_TEST_PATH),
    Language("go", (".go",), grammar="go", family="go", glued_file_names=True),
    Language("gomod", filenames=("go.mod",)),  # read by the Go family: the module path of import paths
    Language("java", (".java",), grammar="java", family="java"),
    Language("rust", (".rs",), grammar="rust", family="rust"),
    Language("markdown", (".md", ".markdown")),
    Language("rst", (".rst",)),
    Language("text", (".txt",), filenames=("README",)),
    Language("c", (".c",), grammar="c", family="c"),
    # `.h` is read by the C++ grammar: it reads C headers too, and C++ libraries keep their code in `.h` headers
    Language("cpp", (".cc", ".cpp", ".cxx", ".h", ".hpp", ".hh", ".hxx", ".ipp", ".tpp"),
             grammar="cpp", family="c"),
    Language("ruby", (".rb",)),
    Language("php", (".php",)),
    Language("csharp", (".cs",)),
    Language("kotlin", (".kt",)),
    Language("scala", (".scala",)),
    Language("swift", (".swift",)),
    Language("sql", (".sql",)),
    Language("proto", (".proto",)),
    Language("yaml", (".yaml", ".yml")),
    Language("toml", (".toml",)),
    Language("json", (".json",)),
    Language("ini", (".cfg", ".ini")),
    Language("shell", (".sh", ".bash")),
    Language("make", filenames=("Makefile",)),
    Language("dockerfile", filenames=("Dockerfile",)),
)

"""The language table and the test-path rule, in one place (semantica/languages.py)."""

from __future__ import annotations

import pytest

from semantica.languages import KNOWN_LANGUAGES, is_test_path, language_of


@pytest.mark.parametrize("path", ["tests/test_app.py", "pkg/tests/helpers.py", "test_utils.py", "src/conftest.py",
                                  "server/handler_test.go", "lib/testing/fixtures.rs", "mocks/client.ts",
                                  "a/test_x/b.py", "source/retry.test.ts", "src/utils.spec.js", "src/__tests__/card.js",
                                  "src/__mocks__/fetch.ts", "ui/Button.test.tsx", "lib/x.spec.mjs"])
def test_test_paths(path: str) -> None:
    assert is_test_path(path)


@pytest.mark.parametrize("path", ["src/app.py", "latest.py", "attestation/sign.py", "contest.py", "protest/x.go",
                                  "docs/testing.md", "", "src/contest.ts",
                                  "lib/latest.js", "src/spec.ts", "test.go.md"])
def test_product_paths(path: str) -> None:
    assert not is_test_path(path)


def test_the_graph_retriever_and_localization_share_the_rule() -> None:
    import serving.core.localize
    import serving.retrievers.graph

    assert serving.retrievers.graph.is_test_path is serving.core.localize.is_test_path is is_test_path


@pytest.mark.parametrize(("path", "language"), [
    ("pkg/a.py", "python"), ("a.py", "python"), ("pkg/a.py/", "python"), ("pkg/a.py/.", "python"),
    ("pkg//Makefile", "make"), ("", ""), ("/", ""), ("pkg/..", ""), ("pkg/.py", ""), ("x\\y.go", "go")])
def test_language_of_odd_paths(path: str, language: str) -> None:
    """The file name is the last segment, with pathlib's reading of trailing separators and dot segments."""
    assert language_of(path) == language


def test_language_table() -> None:
    assert language_of("pkg/a.py") == "python" and language_of("Makefile") == "make" and language_of("x.unknown") == ""
    assert {"python", "go", "rust", "java", "typescript", "javascript"} <= KNOWN_LANGUAGES

"""The `exact` retriever fused into the hybrid query: a quoted string or a pasted code line finds the file that
holds it in the top 3, through the real pipeline on this repository's exact index."""

from __future__ import annotations

import dataclasses

import pytest

from semantica.api import SearchRequest
from serving.pipeline import SearchPipeline
from serving.retrievers.exact import PastedLineClassifier

pytestmark = pytest.mark.timeout(900)
# (query, the file holding it): pasted lines, error messages and quoted strings from the indexed files
HELD_IN = [
    ("class ErrorKind(Enum):", "semantica/errors.py"),
    ("tree-sitter-language-pack==0.13.0", "pyproject.toml"),
    ('"not valid UTF-8 (byte"', "pipelines/discover.py"),
    ("generated or minified (a line of", "pipelines/discover.py"),
    ('Language("markdown", (".md", ".markdown")),', "semantica/languages/table.py"),
]


def test_fragments_are_quoted_strings_or_the_query_when_it_reads_as_a_code_line():
    fragments = PastedLineClassifier(min_chars=4).fragments
    assert fragments('find "has been deprecated" in flag.go') == ["has been deprecated"]
    assert fragments("JSON.stringify(this.#options.json)") == ["JSON.stringify(this.#options.json)"]
    assert fragments("how are vectors cached by content sha") == []
    assert fragments("say 'ab' please") == []  # too short to look for
    # a bare (dotted) identifier is a symbol lookup: the symbol retriever answers it, its call sites would not
    assert fragments("SnapshotSet.get") == [] and fragments("std::vector") == []
    assert fragments("x.y = 3") == ["x.y = 3"] and fragments("self.config.exact") == []


@pytest.fixture(scope="module")
def pipelines(indexed_exact):
    """The shipped pipeline (the exact retriever on) and the same without it."""
    config = indexed_exact.config
    assert "exact" in config.retrieval.retrievers and config.fusion.extra_weights.get("exact")  # on by default
    without = dataclasses.replace(config, retrieval=dataclasses.replace(
        config.retrieval, retrievers=[r for r in config.retrieval.retrievers if r != "exact"]))
    return SearchPipeline(without), SearchPipeline(config)


def top_paths(pipeline: SearchPipeline, query: str, name: str) -> list[str]:
    response = pipeline.search(SearchRequest(query=query, repos=[name], k=10, late_interaction=False))
    paths: list[str] = []
    for hit in response.hits:
        if hit.path not in paths:
            paths.append(hit.path)
    return paths[:3]


def test_a_pasted_line_or_quoted_string_finds_its_file_in_the_top_3(pipelines, indexed_exact):
    base, fused = pipelines
    missed = {q: top_paths(fused, q, indexed_exact.name) for q, path in HELD_IN
              if path not in top_paths(fused, q, indexed_exact.name)[:1]}
    assert missed == {}  # first, not only in the top 3
    without = [q for q, path in HELD_IN if path not in top_paths(base, q, indexed_exact.name)]
    assert without  # the four built-in retrievers alone miss some of them (BM25 ranks, it does not match)


def test_the_exact_list_alone_ranks_the_holding_chunk_first(pipelines, indexed_exact):
    _, fused = pipelines
    response = fused.search(SearchRequest(query="class ErrorKind(Enum):", repos=[indexed_exact.name], k=5,
                                          strategies=["exact"], late_interaction=False))
    first = response.hits[0]
    assert first.path == "semantica/errors.py" and first.start_line <= 65 <= first.end_line

"""The localizer's partial sorts give what a full sort gives: the best `count` function keys (equal scores by key)
and the best `depth` BM25 hits (equal scores by document), on random scores with many ties, and on a table of this
repository's own files, where cutting the candidates never reorders them."""

from __future__ import annotations

import random

import numpy as np
import pytest

from semantica.stores.localizer.bm25 import top_scores
from semantica.stores.localizer.features import CandidateConfig, CandidateGenerator, best_keys
from semantica.stores.localizer.table import LocalizerTableBuilder
from tests.conftest import REPO_ROOT

CASES = 300
QUERIES = ("ranked list of candidate functions by score", "token budget of the context blocks",
           "freshness of a watched working tree", "graph walk nearest nodes", "merge the shards' hits")


def full_sort_keys(keys: list[str], scores: np.ndarray, count: int) -> list[str]:
    return [keys[i] for i in np.lexsort((np.array(keys), -scores)).tolist()][:count]


def full_sort_hits(scores: np.ndarray, depth: int) -> list[tuple[int, float]]:
    hit = np.flatnonzero(scores > 0)
    return [(int(i), float(scores[i])) for i in hit[np.argsort(-scores[hit], kind="stable")[:depth]]]


def test_best_keys_are_the_full_sorts_first() -> None:
    rng = random.Random(5)
    for _ in range(CASES):
        n = rng.randint(0, 60)
        keys = [f"src/m{rng.randint(0, 9)}.py::f{rng.randint(0, 99)}_{i}" for i in range(n)]
        rng.shuffle(keys)
        scores = np.array([rng.choice((0.0, 0.25, 0.5, 1.0 / 61, 1.0 / 62)) for _ in keys], dtype=np.float64)
        for count in {0, 1, n // 2, max(n - 1, 0), n, n + 5}:
            assert best_keys(keys, scores, count) == full_sort_keys(keys, scores, count), (n, count)


def test_top_scores_are_the_full_sorts_first() -> None:
    rng = np.random.default_rng(5)
    for _ in range(CASES):
        n = int(rng.integers(0, 80))
        scores = rng.choice(np.array([0.0, 0.0, 1.5, 2.25, 3.0, 7.125], dtype=np.float32), n) * (
            1 + (rng.random(n) < 0.3).astype(np.float32))
        for depth in {0, 1, n // 3, n, n + 3}:
            assert top_scores(scores, depth) == full_sort_hits(scores, depth), (n, depth)


@pytest.fixture(scope="module")
def table():
    files = {str(p.relative_to(REPO_ROOT)): p.read_text(encoding="utf-8")
             for p in sorted((REPO_ROOT / "semantica").rglob("*.py"))}
    assert len(files) > 50
    return LocalizerTableBuilder().build(files)


@pytest.mark.parametrize("query", QUERIES)
def test_the_candidate_cut_keeps_the_full_order(table, query: str) -> None:
    everything = CandidateGenerator(CandidateConfig(max_function_candidates=10 ** 6)).build(table, query, features=False)
    cut = CandidateGenerator(CandidateConfig(max_function_candidates=40)).build(table, query, features=False)
    assert len(everything.functions) > 40
    assert cut.functions == everything.functions[:40]
    assert cut.function_fusion.tolist() == everything.function_fusion[:40].tolist()

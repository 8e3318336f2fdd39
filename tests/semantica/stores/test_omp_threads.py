"""FAISS work too small to split (one query's search: `faiss.query_threads`; the token codec fit:
`token_vectors.fit_threads`) runs on a set number of OpenMP threads; the process setting comes back after."""

from __future__ import annotations

import faiss

from semantica.stores.vectors import omp_threads


def test_omp_threads_are_set_for_the_block_and_restored() -> None:
    before = faiss.omp_get_max_threads()
    with omp_threads(1):
        assert faiss.omp_get_max_threads() == 1
    assert faiss.omp_get_max_threads() == before
    with omp_threads(0):  # 0 leaves FAISS alone
        assert faiss.omp_get_max_threads() == before

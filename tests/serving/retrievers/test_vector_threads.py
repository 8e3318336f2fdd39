"""One query's FAISS search runs on `faiss.query_threads` OpenMP threads; the process setting comes back after."""

from __future__ import annotations

import faiss

from serving.retrievers.vector import omp_threads


def test_omp_threads_are_set_for_the_block_and_restored() -> None:
    before = faiss.omp_get_max_threads()
    with omp_threads(1):
        assert faiss.omp_get_max_threads() == 1
    assert faiss.omp_get_max_threads() == before
    with omp_threads(0):  # 0 leaves FAISS alone
        assert faiss.omp_get_max_threads() == before

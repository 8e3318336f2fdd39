"""Narrow product-quantiser sub-spaces, padded for FAISS's fast path, give what FAISS's own quantiser gives: the
centroids of `ProductQuantizer.train` and the codes of `compute_codes`."""

from __future__ import annotations

import faiss
import numpy as np
import pytest

from semantica.stores.pq_subspaces import SubspaceAssigner, train_subspaces
from tests.semantica.stores.test_token_vectors import _unit

SHAPES = [(48, 8), (64, 16)]  # 6-d sub-spaces (padded to 8), and 4-d ones


def trained(dim: int, pq_m: int, sample: np.ndarray, padded: bool):
    pq = faiss.ProductQuantizer(dim, pq_m, 8)
    pq.cp.niter = 6
    train_subspaces(pq, sample) if padded else pq.train(sample)
    return pq


@pytest.mark.parametrize(("dim", "pq_m"), SHAPES)
def test_the_subspace_fit_is_faiss_product_quantiser_training(dim: int, pq_m: int) -> None:
    sample = _unit(np.random.default_rng(10), 12000, dim, 16)
    reference, padded = trained(dim, pq_m, sample, False), trained(dim, pq_m, sample, True)
    assert np.array_equal(faiss.vector_to_array(padded.centroids), faiss.vector_to_array(reference.centroids))


@pytest.mark.parametrize(("dim", "pq_m"), SHAPES)
def test_the_padded_search_gives_faiss_codes(dim: int, pq_m: int) -> None:
    rng = np.random.default_rng(12)
    pq = trained(dim, pq_m, _unit(rng, 12000, dim, 16), False)
    vectors = _unit(rng, 3000, dim, 16)
    codes = SubspaceAssigner(pq).codes(vectors)
    assert codes.dtype == np.uint8 and codes.shape == (3000, pq_m)
    assert np.array_equal(codes, pq.compute_codes(vectors))
    assert SubspaceAssigner(pq).codes(vectors[:0]).shape == (0, pq_m)

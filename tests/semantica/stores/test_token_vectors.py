"""Token-vector compression: PCA projection, int8 codes, the snapshot files and their MaxSim."""

from __future__ import annotations

import numpy as np
import pytest

from semantica.stores.token_vectors import (
    Quantization,
    StoredTokenVectors,
    TokenCodec,
    TokenProjection,
    TokenVectorError,
    write_token_vectors,
)


def _unit(rng: np.random.Generator, n: int, dim: int, rank: int) -> np.ndarray:
    """Unit vectors that mostly live in a `rank`-dim subspace (like real token outputs)."""
    basis = rng.normal(size=(rank, dim))
    x = rng.normal(size=(n, rank)) @ basis + 0.05 * rng.normal(size=(n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _exact_maxsim(q: np.ndarray, d: np.ndarray) -> float:
    return float((q @ d.T).max(axis=1).mean())


def test_projection_keeps_inner_products_of_low_rank_data() -> None:
    rng = np.random.default_rng(0)
    tokens = _unit(rng, 4000, 96, 12)
    projection = TokenProjection.fit(tokens, 16)
    assert projection.matrix is not None and projection.matrix.shape == (96, 16)
    a, b = projection.apply(tokens[:200]), projection.apply(tokens[200:400])
    exact = (tokens[:200] @ tokens[200:400].T)
    assert np.abs((a @ b.T) - exact).max() < 0.05
    assert np.linalg.norm(a, axis=1).max() <= 1.0 + 1e-5


def test_projection_identity_and_sha() -> None:
    rng = np.random.default_rng(1)
    tokens = _unit(rng, 100, 32, 4)
    identity = TokenProjection.fit(tokens, 0)
    assert identity.matrix is None and identity.dim == 32 and identity.sha == "identity-32"
    assert TokenProjection.fit(tokens, 64).matrix is None  # asking for more dims than exist keeps them all
    one, two = TokenProjection.fit(tokens, 8), TokenProjection.fit(tokens.copy(), 8)
    assert one.sha == two.sha  # deterministic (sign-fixed) eigenvectors
    with pytest.raises(TokenVectorError, match="width"):
        one.apply(np.zeros((2, 31), np.float32))


@pytest.mark.parametrize("quantization", ["int8", "float16"])
def test_stored_maxsim_matches_exact_maxsim(tmp_path, quantization: str) -> None:
    rng = np.random.default_rng(2)
    docs = [_unit(rng, n, 64, 64) for n in (5, 0, 40, 17)]  # full rank, identity projection: only quantisation loss
    codec = TokenCodec(TokenProjection(None, 64), quantization)
    info = write_token_vectors(tmp_path / "tokens", codec, [codec.encode(d) for d in docs], "m", 256)
    assert (info.chunks, info.tokens, info.dim, info.quantization) == (4, 62, 64, quantization)
    store = StoredTokenVectors(tmp_path / "tokens", info)
    assert store.compatible("m", 256) and not store.compatible("other", 256) and not store.compatible("m", 128)
    query = _unit(rng, 7, 64, 64)
    got = store.maxsim(query, [3, 1, 0, 2])
    want = [_exact_maxsim(query, docs[3]), 0.0, _exact_maxsim(query, docs[0]), _exact_maxsim(query, docs[2])]
    assert np.allclose(got, want, atol=0.01)
    assert store.maxsim(query, []).shape == (0,)
    assert codec.bytes_per_token() == (66 if quantization == "int8" else 130)


def test_int8_codes_are_small_and_unit_scaled() -> None:
    rng = np.random.default_rng(3)
    codec = TokenCodec(TokenProjection(None, 32), Quantization.INT8)
    codes, scales = codec.encode(_unit(rng, 10, 32, 32))
    assert codes.dtype == np.int8 and scales.dtype == np.float16 and np.abs(codes).max() == 127
    decoded = codes.astype(np.float32) * scales.astype(np.float32)[:, None]
    assert np.allclose(np.linalg.norm(decoded, axis=1), 1.0, atol=0.02)
    empty_codes, empty_scales = codec.encode(np.zeros((0, 32), np.float32))
    assert empty_codes.shape == (0, 32) and empty_scales.shape == (0,)


def test_manifest_mismatch_is_refused(tmp_path) -> None:
    rng = np.random.default_rng(4)
    codec = TokenCodec(TokenProjection.fit(_unit(rng, 500, 32, 8), 8), "int8")
    info = write_token_vectors(tmp_path / "tokens", codec, [codec.encode(_unit(rng, 3, 32, 8))], "m", 256)
    info.chunks = 2
    with pytest.raises(TokenVectorError, match="do not match"):
        StoredTokenVectors(tmp_path / "tokens", info)
    info.chunks, info.projection_sha = 1, "0" * 16
    with pytest.raises(TokenVectorError, match="projection"):
        StoredTokenVectors(tmp_path / "tokens", info)
    with pytest.raises(ValueError, match="unknown quantization"):
        TokenCodec(codec.projection, "int4")


def test_product_quantiser_round_trip_and_maxsim(tmp_path) -> None:
    rng = np.random.default_rng(6)
    sample = _unit(rng, 3000, 64, 16)
    codec = TokenCodec.fit(sample, 0, "pq", 16)
    assert codec.code_width == 16 and codec.code_dtype == np.uint8 and codec.sha.startswith("pq-")
    assert codec.bytes_per_token() == 18
    docs = [_unit(rng, n, 64, 16) for n in (9, 0, 30)]
    info = write_token_vectors(tmp_path / "tokens", codec, [codec.encode(d) for d in docs], "m", 256)
    assert info.code_width == 16 and (tmp_path / "tokens" / "pq.faiss").exists()
    store = StoredTokenVectors(tmp_path / "tokens", info)
    query = _unit(rng, 5, 64, 16)
    got = store.maxsim(query, [0, 1, 2])
    want = [_exact_maxsim(query, docs[0]), 0.0, _exact_maxsim(query, docs[2])]
    assert np.allclose(got, want, atol=0.05)
    tiny = TokenCodec.fit(sample[:40], 0, "pq", 16)  # fewer tokens than centroids: still trains
    assert tiny.encode(sample[:3])[0].shape == (3, 16)
    with pytest.raises(TokenVectorError, match="divide"):
        TokenCodec.fit(sample, 0, "pq", 10)


def test_the_pq_fit_trains_on_the_threads_it_is_given_and_restores_faiss(monkeypatch) -> None:
    """`token_vectors.fit_threads`: FAISS's k-means on 2 OpenMP threads took 34-43 s on a loaded 2-core
    machine where one thread took 5-6 s (docs/reliability.md); the process setting comes back after."""
    import faiss

    seen: list[int] = []
    train = faiss.Clustering.train

    def observed(self, *args):  # noqa: ANN001, ANN202 - FAISS's own signature
        seen.append(faiss.omp_get_max_threads())
        return train(self, *args)

    monkeypatch.setattr(faiss.Clustering, "train", observed)
    before = faiss.omp_get_max_threads()
    sample = _unit(np.random.default_rng(8), 600, 64, 16)
    one = TokenCodec.fit(sample, 0, "pq", 16, threads=1)
    default = TokenCodec.fit(sample, 0, "pq", 16)
    assert seen == [1] * 16 + [before] * 16 and faiss.omp_get_max_threads() == before  # one k-means a sub-space
    assert one.sha == default.sha  # the same codec, whatever the thread count


def test_product_quantiser_codes_match_faiss_and_batch_encoding() -> None:
    """The matmul assignment gives FAISS's own codes; one batched pass equals per-chunk passes."""
    rng = np.random.default_rng(7)
    sample = _unit(rng, 4000, 64, 16)
    codec = TokenCodec.fit(sample, 0, "pq", 16)
    tokens = _unit(rng, 2500, 64, 16)  # more rows than one numpy pass holds
    want = codec.pq.compute_codes(tokens)
    got, scales = codec.encode(tokens)
    assert got.dtype == np.uint8 and got.shape == want.shape and scales.shape == (2500,)
    assert (got == want).mean() >= 0.999
    chunks = [tokens[:7], tokens[7:7], tokens[7:300]]
    batched = codec.encode_many(chunks)
    assert [len(c) for c, _ in batched] == [7, 0, 293]
    for (codes, _), chunk in zip(batched, chunks):
        assert np.array_equal(codes, codec.encode(chunk)[0])
    assert codec.encode(tokens[:0])[0].shape == (0, 16)


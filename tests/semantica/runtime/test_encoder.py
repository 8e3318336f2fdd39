"""The bi-encoder's batching (token budget over length-sorted texts) on the real model (the ONNX runtime:
test_onnx_runtime.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from semantica.config import EncoderConfig
from semantica.runtime.encoder import QUERY_FORWARD_THREADS, Encoder, query_encoder_config, shared_encoder

TEXTS = ["x", "def add(a, b):\n    return a + b", "retry " * 200, "", "class Ledger:\n    pass", "a b c d e f g h " * 20]


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return shared_encoder(EncoderConfig())


def test_batches_cover_every_text_once_within_the_token_budget(encoder: Encoder) -> None:
    tight = Encoder.__new__(Encoder)
    tight.__dict__.update(encoder.__dict__, config=dataclasses.replace(encoder.config, batch_tokens=300))
    batches = tight.batches(TEXTS, 256)
    assert sorted(i for b in batches for i in b) == list(range(len(TEXTS)))
    lengths = [len(ids) for ids, _ in encoder.tokenizer.encode(TEXTS, 256)]
    for batch in batches:
        assert len(batch) == 1 or len(batch) * max(lengths[i] for i in batch) <= 300
    assert len(batches[0]) > 1 and batches[-1] == [2]  # short texts share a pass; the 256-token one goes alone
    fixed = Encoder.__new__(Encoder)
    fixed.__dict__.update(encoder.__dict__, config=dataclasses.replace(encoder.config, batch_tokens=0, batch_size=4))
    assert fixed.batches(TEXTS, 256) == [[0, 1, 2, 3], [4, 5]]


def test_token_budget_batching_keeps_vectors_and_order(encoder: Encoder) -> None:
    fixed = Encoder.__new__(Encoder)
    fixed.__dict__.update(encoder.__dict__, config=dataclasses.replace(encoder.config, batch_tokens=0, batch_size=1))
    one_by_one = fixed.encode(TEXTS)
    vectors, tokens = encoder.encode_with_tokens(TEXTS)
    assert np.allclose(vectors, one_by_one, atol=1e-4)
    assert np.allclose(encoder.encode(TEXTS), vectors, atol=1e-6)
    assert [len(t) for t in tokens] == [len(t) for t in fixed.encode_tokens(TEXTS)]
    assert tokens[3].shape == (0, encoder.dim) or len(tokens[3]) <= 2  # empty text: no real tokens


QUERIES = ["LFPlugin", "test same path twice", "how does pytest rewrite assert statements", "tmp_path_factory scope"]


@pytest.mark.parametrize("runtime", ["openvino", "onnx"])
def test_a_query_encoder_runs_one_thread_and_encodes_as_the_index_encoder_does(runtime: str) -> None:
    index_config = EncoderConfig(runtime=runtime)
    query_config = query_encoder_config(index_config)
    assert query_config.torch_threads == QUERY_FORWARD_THREADS
    index, query = shared_encoder(index_config), shared_encoder(query_config)
    assert query is not index and query.model_id == index.model_id  # the same vectors' identity
    for text in QUERIES:
        (pooled, tokens), (alone, alone_tokens) = (e.encode_with_tokens([text], 64) for e in (index, query))
        assert np.array_equal(pooled, alone) and all(np.array_equal(a, b) for a, b in zip(tokens, alone_tokens))


def test_a_query_encoder_keeps_a_configured_thread_count_and_torch_its_own() -> None:
    assert query_encoder_config(EncoderConfig(torch_threads=3)).torch_threads == 3
    torch_config = EncoderConfig(runtime="torch")
    assert query_encoder_config(torch_config) is torch_config  # torch's threads are the process's: left alone

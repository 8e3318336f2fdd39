"""The bi-encoder's batching (token budget over length-sorted texts) and its torch int8 CPU runtime, on the real model
(the ONNX runtime and its int8: test_onnx_runtime.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from semantica.config import EncoderConfig
from semantica.encoder import Encoder, shared_encoder
from semantica.encoder_identity import INT8_SUFFIX

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


def test_int8_runtime_is_close_and_named_apart() -> None:
    quantized = Encoder(EncoderConfig(quantize_int8=True, device="cpu", runtime="torch"))
    assert quantized.model_id.endswith(INT8_SUFFIX)
    reference = shared_encoder(EncoderConfig(runtime="torch"))
    cosines = (quantized.encode(TEXTS[:3]) * reference.encode(TEXTS[:3])).sum(axis=1)
    assert cosines.min() > 0.8  # measured 0.85-0.95: not free (lab/notes/results-log.md: why it stays off)


def test_a_snapshot_of_either_runtime_is_queried_with_that_runtime() -> None:
    from semantica.encoder import EncoderMismatchError, snapshot_encoder

    fp32 = shared_encoder(EncoderConfig(runtime="torch"))
    int8 = snapshot_encoder(fp32.model_id + INT8_SUFFIX, fp32.dim, "", fp32)  # fp32 server, int8 snapshot
    assert int8 is not fp32 and int8.model_id == fp32.model_id + INT8_SUFFIX and int8.config.quantize_int8
    assert shared_encoder(dataclasses.replace(int8.config)) is int8  # one loaded runtime per identity
    cosines = (int8.encode(TEXTS[:3]) * fp32.encode(TEXTS[:3])).sum(axis=1)
    assert 0.9 < cosines.min() < 0.99999  # close to fp32, and really another runtime
    back = snapshot_encoder(fp32.model_id, fp32.dim, "", int8)  # int8 server, fp32 snapshot
    assert back.model_id == fp32.model_id and not back.config.quantize_int8
    with pytest.raises(EncoderMismatchError, match="re-index"):  # the old per-tensor runtime is refused, not mixed
        snapshot_encoder(fp32.model_id + "+int8", fp32.dim, "", fp32)

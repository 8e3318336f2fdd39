"""`encoder.int8_scales: text`: ORT's per-tensor int8 graph, one text per forward pass, on real chunks of this
repository. Its one activation scale is then the text's own, so a vector must not depend on who batched it: the
encoder enforces one text a pass however a caller groups texts."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from semantica.config import EncoderConfig
from semantica.encoder import (
    Encoder,
    Int8Scales,
    encoder_identity,
    parse_model_id,
    shared_encoder,
    snapshot_encoder,
)
from semantica.onnx_export import PER_TENSOR_GRAPH

SAME_VECTOR_COSINE = 0.99999


@pytest.fixture(scope="module")
def per_text() -> Encoder:
    return shared_encoder(EncoderConfig(runtime="onnx", quantize_int8=True, int8_scales="text"))


@pytest.fixture(scope="module")
def chunks(mixed_chunks: list[str]) -> list[str]:
    return mixed_chunks


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


def test_it_runs_the_per_tensor_graph_under_its_own_identity(per_text) -> None:
    rows = shared_encoder(dataclasses.replace(per_text.config, int8_scales="row"))
    fp32 = shared_encoder(dataclasses.replace(per_text.config, quantize_int8=False))
    assert per_text.forward_pass.onnx_path.name == PER_TENSOR_GRAPH
    identity = parse_model_id(per_text.model_id)
    assert identity.per_text and identity.quantized and identity.int8_scales is Int8Scales.TEXT
    assert per_text.identity.runtime_name == "onnx-int8-text" and identity.model_id == per_text.model_id
    assert len({per_text.model_id, rows.model_id, fp32.model_id}) == 3  # caches and snapshots stay apart
    assert not parse_model_id(rows.model_id).per_text
    assert encoder_identity(per_text.config) == (per_text.model_id, per_text.dim)


def test_a_chunk_has_one_vector_alone_and_in_any_batch(per_text, chunks) -> None:
    alone_pooled, alone_tokens = zip(*[(p[0], t[0]) for p, t in (per_text.encode_with_tokens([c]) for c in chunks)])
    alone = np.stack(alone_pooled)
    batched, tokens = per_text.encode_with_tokens(chunks)
    reordered = per_text.encode([*chunks[::-1], *chunks[:5]])[: len(chunks)][::-1]
    padded = per_text._forward(chunks, per_text.config.max_length).pooled  # one padded batch, past the batching
    for other in (batched, reordered, padded):
        assert _cosines(alone, other).min() >= SAME_VECTOR_COSINE
    for mine, theirs in zip(alone_tokens, tokens):
        assert mine.shape == theirs.shape and _cosines(mine, theirs).min() >= SAME_VECTOR_COSINE


def test_it_is_another_numeric_path_than_per_row_int8(per_text, chunks) -> None:
    rows = shared_encoder(dataclasses.replace(per_text.config, int8_scales="row"))
    cosines = _cosines(per_text.encode(chunks), rows.encode(chunks))
    assert 0.9 < cosines.min() and cosines.mean() < SAME_VECTOR_COSINE


def test_a_text_snapshot_is_served_with_its_own_mode(per_text) -> None:
    rows = shared_encoder(dataclasses.replace(per_text.config, int8_scales="row"))
    served = snapshot_encoder(per_text.model_id, per_text.dim, "", rows)
    assert served.model_id == per_text.model_id and served.config.int8_scales == "text"


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="int8_scales must be one of"):
        Encoder(EncoderConfig(runtime="onnx", quantize_int8=True, int8_scales="column"))

"""The sentence vector's two poolings (torch for the torch runtime and the trainer, numpy for ONNX Runtime) on the
real model's hidden states of one padded batch: the same vectors, padding never counted."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from semantica.config import EncoderConfig
from semantica.runtime.encoder import Encoder, pad, shared_encoder
from semantica.runtime.pooling import numpy_mean_pool, torch_mean_pool

TEXTS = ["x", "def add(a, b):\n    return a + b", "", "class Ledger:\n    pass", "retry the request on timeout " * 8]
MAX_LENGTH = 64


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return shared_encoder(EncoderConfig())


@pytest.fixture(scope="module")
def batch(encoder: Encoder) -> tuple[np.ndarray, np.ndarray]:
    """The last hidden states and attention mask of TEXTS padded into one batch (rows of unequal length)."""
    inputs = pad(encoder.tokenizer.encode(TEXTS, MAX_LENGTH))
    hidden = encoder.forward_pass(inputs, keep_hidden=True).hidden
    assert hidden is not None and len(set(inputs["attention_mask"].sum(axis=1))) > 1
    return hidden, inputs["attention_mask"]


def _torch_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return torch_mean_pool(torch.from_numpy(hidden), torch.from_numpy(mask)).numpy()


def test_torch_and_numpy_pooling_give_the_same_unit_vectors(batch) -> None:
    hidden, mask = batch
    by_numpy = numpy_mean_pool(hidden, mask)
    assert np.allclose(_torch_pool(hidden, mask), by_numpy, atol=1e-6)
    assert np.allclose(np.linalg.norm(by_numpy, axis=1), 1.0, atol=1e-5)


def test_padding_positions_never_count(batch) -> None:
    hidden, mask = batch
    noisy = hidden + (1 - mask)[..., None].astype(np.float32) * 1000.0  # garbage where the mask is 0
    assert np.allclose(numpy_mean_pool(noisy, mask), numpy_mean_pool(hidden, mask), atol=1e-6)
    assert np.allclose(_torch_pool(noisy, mask), _torch_pool(hidden, mask), atol=1e-6)


def test_a_text_pooled_in_a_padded_batch_is_the_vector_it_gets_alone(encoder: Encoder, batch) -> None:
    alone = np.stack([encoder.encode([text], MAX_LENGTH)[0] for text in TEXTS])
    assert np.allclose(numpy_mean_pool(*batch), alone, atol=1e-4)

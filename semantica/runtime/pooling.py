"""The bi-encoder's sentence vector: the masked mean of the last hidden states over real tokens, L2-normalised.

One definition per array library, so every path that makes a sentence vector makes the same one: `torch_mean_pool`
for the torch runtime (`semantica.runtime.torch_runtime.TorchForward`, pooling on the model's device) and the trainer
(`jobs.train.encoder`, whose gradients must flow through it); `numpy_mean_pool` for ONNX Runtime's outputs, which
are numpy arrays. tests/semantica/runtime/test_pooling.py holds the two equal.
"""

from __future__ import annotations

from typing import Any

import numpy as np

MASK_SUM_FLOOR = 1e-9  # an all-padding row divides by this instead of zero (its vector stays zero)
NORM_FLOOR = 1e-12  # torch.nn.functional.normalize's default eps: a zero vector stays zero


def torch_mean_pool(hidden: Any, mask: Any) -> Any:
    """(batch, sequence, dim) hidden states and a (batch, sequence) 0/1 mask -> (batch, dim) unit vectors, float32."""
    import torch

    weights = mask.unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=MASK_SUM_FLOOR)
    return torch.nn.functional.normalize(pooled.float(), dim=-1, eps=NORM_FLOOR)


def numpy_mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """`torch_mean_pool` on numpy arrays."""
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden.astype(np.float32, copy=False) * weights).sum(axis=1) / np.clip(weights.sum(axis=1),
                                                                                     MASK_SUM_FLOOR, None)
    return l2_normalise(pooled)


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    """Rows (or token vectors) scaled to unit length; zero rows stay zero."""
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.clip(norms, NORM_FLOOR, None)

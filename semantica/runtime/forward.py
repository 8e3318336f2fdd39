"""What every numeric runtime of the encoder shares (PyTorch in `encoder`, ONNX Runtime in `onnx_runtime`): the
forward pass's protocol and output, where exports live, the load error. Its own module so both runtimes import it
and neither imports the other's module to get it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from semantica.config import EncoderConfig
from semantica.runtime.onnx_export import default_export_dir


class EncoderLoadError(RuntimeError):
    """The model could not be found or loaded; the message says where it looked."""


def export_root(config: EncoderConfig) -> Path:
    return Path(config.export_dir).expanduser() if config.export_dir else default_export_dir()


@dataclass(frozen=True)
class ForwardOutput:
    """One batch through the model: sentence vectors (batch, dim), unit length, and the last hidden states
    (batch, sequence, dim) when they were asked for (late interaction's token vectors come from them)."""

    pooled: np.ndarray
    hidden: np.ndarray | None


class ForwardPass(Protocol):
    """A numeric runtime: padded int64 inputs -> pooled vectors (`semantica.runtime.pooling`) and hidden states, float32."""

    def __call__(self, inputs: dict[str, np.ndarray], keep_hidden: bool) -> ForwardOutput: ...

"""The per-row int8 rewrite on the real export: what it replaces, what it refuses, and why it exists (ORT's own
per-tensor graph gives a text another vector in another batch; the rewritten one does not)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import onnx
import pytest

from semantica.config import EncoderConfig
from semantica.encoder import Encoder, export_root, shared_encoder
from semantica.onnx_export import ensure_export, per_tensor_int8
from semantica.onnx_rows import QUANTIZER_OP, RowQuantizeError, RowQuantizer
from semantica.onnx_runtime import OnnxForward

BATCH_INVARIANT_COSINE = 0.99999


@pytest.fixture(scope="module")
def int8() -> Encoder:
    return shared_encoder(EncoderConfig(runtime="onnx", quantize_int8=True, int8_scales="row"))


@pytest.fixture(scope="module")
def texts(mixed_chunks: list[str]) -> list[str]:
    return mixed_chunks


def _graph(encoder: Encoder, quantized: bool) -> Path:
    return ensure_export(encoder.model_path, export_root(encoder.config), quantized).path


def _per_tensor_graph(encoder: Encoder) -> Path:
    return per_tensor_int8(ensure_export(encoder.model_path, export_root(encoder.config), quantized=False)).path


def test_every_batch_wide_quantiser_becomes_per_row(int8) -> None:
    assert int8.forward_pass.onnx_path == _graph(int8, quantized=True)  # what `int8_scales: row` runs
    ops = [node.op_type for node in onnx.load(str(_graph(int8, quantized=True))).graph.node]
    per_tensor_ops = [node.op_type for node in onnx.load(str(_per_tensor_graph(int8))).graph.node]
    assert QUANTIZER_OP not in ops and "MatMulInteger" not in ops and QUANTIZER_OP in per_tensor_ops
    assert ops.count("MatMulIntegerToFloat") == per_tensor_ops.count("MatMulInteger") > 0


def test_a_graph_without_dynamic_quantisers_is_refused(int8) -> None:
    with pytest.raises(RowQuantizeError, match="not a graph this rewrite knows"):
        RowQuantizer(onnx.load(str(_graph(int8, quantized=False)))).rewrite()


def _alone_vs_batched(encoder: Encoder, texts: list[str]) -> float:
    alone = np.stack([encoder.encode([t])[0] for t in texts])
    return float(np.sum(alone * encoder.encode(texts), axis=1).min())


def test_per_row_scales_make_a_vector_independent_of_its_batch_and_per_tensor_ones_do_not(int8, texts) -> None:
    per_tensor = Encoder(dataclasses.replace(int8.config))
    per_tensor.forward_pass = OnnxForward(per_tensor.config, _per_tensor_graph(int8))
    assert _alone_vs_batched(int8, texts) >= BATCH_INVARIANT_COSINE
    assert _alone_vs_batched(per_tensor, texts) < 0.9999

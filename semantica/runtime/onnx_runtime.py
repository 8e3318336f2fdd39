"""The encoder's ONNX Runtime forward pass: CPU sessions over the checkpoint's one-time export
(semantica/runtime/onnx_export.py). `semantica.runtime.encoder.Encoder` tokenises and names the vectors for both runtimes;
this module runs the graph and pools its numpy output (`semantica.runtime.pooling.numpy_mean_pool`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from semantica.config import EncoderConfig
from semantica.encoder_identity import EXPORT_SHA_CHARS
from semantica.runtime.forward import EncoderLoadError, ForwardOutput, ForwardPass, export_root
from semantica.runtime.onnx_export import OUTPUT_NAME, ExportedModel, ExportError, ensure_export
from semantica.runtime.pooling import numpy_mean_pool


def _onnx_session(onnx_path: Path, intra_op_threads: int) -> Any:
    """One ONNX Runtime CPU session (`intra_op_threads` 0 = ORT's default, one per core)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # warnings about unused initialisers are noise in CLI output
    # no busy-waiting workers between ops: on a shared or loaded machine they burn the cores others need
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.inter_op_num_threads = 1
    if intra_op_threads > 0:
        options.intra_op_num_threads = intra_op_threads
    try:
        return ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph types
        raise EncoderLoadError(f"cannot load the ONNX export {onnx_path}: {exc} (delete it to re-export)") from exc


class OnnxForward:
    """ONNX Runtime on CPU over the exported fp32 graph: one session for batches and queries alike."""

    def __init__(self, config: EncoderConfig, onnx_path: Path) -> None:

        self.onnx_path = onnx_path
        self.session = _onnx_session(onnx_path, config.torch_threads)
        self.output = OUTPUT_NAME
        self.inputs = {i.name for i in self.session.get_inputs()}

    def __call__(self, inputs: dict[str, np.ndarray], keep_hidden: bool) -> ForwardOutput:
        hidden = self.session.run([self.output], {k: v for k, v in inputs.items() if k in self.inputs})[0]
        return ForwardOutput(numpy_mean_pool(hidden, inputs["attention_mask"]), hidden if keep_hidden else None)


def cpu_export(config: EncoderConfig, model_path: Path) -> ExportedModel:
    """The checkpoint's ONNX export (made once, cached by weights hash) for a CPU runtime (`encoder.runtime` names
    it in the refusal of any other device)."""
    if config.device not in ("auto", "cpu"):
        raise EncoderLoadError(f"encoder.runtime={config.runtime} runs on CPU; encoder.device is {config.device!r} "
                               "(set encoder.runtime=torch for a GPU)")
    try:
        return ensure_export(model_path, export_root(config))
    except ExportError as exc:
        raise EncoderLoadError(str(exc)) from exc


def onnx_forward(config: EncoderConfig, model_path: Path) -> tuple[ForwardPass, str]:
    """The forward pass over the checkpoint's ONNX export and the export's short hash, which joins the encoder's
    identity."""
    exported = cpu_export(config, model_path)
    return OnnxForward(config, exported.path), exported.sha[:EXPORT_SHA_CHARS]

"""The encoder's OpenVINO forward pass: the same one-time ONNX export ONNX Runtime runs
(semantica/runtime/onnx_export.py), compiled by OpenVINO for this CPU in bfloat16 where the CPU has bf16 dot-product
instructions (AVX512-BF16, AMX), else in float32. Weights and activations in bf16 with float32 sums keep every
vector within a cosine of 1e-4 of ONNX Runtime's fp32 and nearly double the throughput on such a CPU (docs/fast.md).
No per-batch scale is involved: a text's vector depends on its batch only through rounding (a cosine of 1 - 4e-6 at
worst, measured; ONNX Runtime's not at all). Pooling is numpy's
(semantica/runtime/pooling.py); the compiled graph is cached beside the export, so a later load skips compiling."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from semantica.config import EncoderConfig
from semantica.encoder_identity import EXPORT_SHA_CHARS
from semantica.runtime.forward import EncoderLoadError, ForwardOutput, ForwardPass, export_root
from semantica.runtime.onnx_runtime import cpu_export
from semantica.runtime.pooling import numpy_mean_pool

BF16 = "bf16"
F32 = "f32"
CPU_BF16_CAPABILITY = "BF16"  # in the CPU plug-in's OPTIMIZATION_CAPABILITIES when it has bf16 instructions
COMPILED_CACHE_DIR = "openvino-compiled"  # under the export root: OpenVINO's compiled blobs, by graph and CPU
WARM_UP_IDS = (101, 102)  # [CLS] [SEP]: the smallest input a BERT-style graph takes
# OpenVINO's Python bindings set up their numpy interop (C++ function-local statics that take the GIL) on a process's
# first infer: two threads making their first infers at once deadlock (one holds the GIL waiting on the static, the
# other holds the static waiting on the GIL). Every compiled model makes one small infer at load, one at a time.
_FIRST_INFERS = threading.Lock()


def _core() -> Any:
    try:
        import openvino
    except ImportError as exc:
        raise EncoderLoadError("encoder.runtime=openvino needs the openvino package (make install)") from exc
    return openvino.Core()


@functools.cache
def cpu_precision() -> str:
    """The precision OpenVINO infers in on this CPU: bf16 where it has bf16 instructions, else f32 (it is part of
    the encoder's identity, so a snapshot built in one is never queried in the other). Asked once per process: every
    cache, actor and model load names itself by it."""
    capabilities = _core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    return BF16 if CPU_BF16_CAPABILITY in capabilities else F32


class OpenVinoForward:
    """One compiled OpenVINO model over the exported graph: one infer request for the blocking passes (the encoder's
    lock makes them one at a time), and a request of their own for the passes `start` runs (reused when done)."""

    def __init__(self, config: EncoderConfig, onnx_path: Path) -> None:
        core = _core()
        core.set_property({"CACHE_DIR": str(export_root(config) / COMPILED_CACHE_DIR)})
        self.precision = cpu_precision()
        properties: dict[str, Any] = {"INFERENCE_PRECISION_HINT": self.precision, "PERFORMANCE_HINT": "LATENCY"}
        if config.torch_threads > 0:
            properties["INFERENCE_NUM_THREADS"] = config.torch_threads
        try:
            self.compiled = core.compile_model(core.read_model(str(onnx_path)), "CPU", properties)
        except RuntimeError as exc:  # OpenVINO raises RuntimeError subclasses for every load failure
            raise EncoderLoadError(f"OpenVINO cannot compile {onnx_path}: {exc} (delete it to re-export)") from exc
        self.request = self.compiled.create_infer_request()
        self._idle_requests: list[Any] = []  # started passes' requests, free again
        self._requests_lock = threading.Lock()
        self.inputs = {port.get_any_name() for port in self.compiled.inputs}
        self.output = self.compiled.outputs[0]
        with _FIRST_INFERS:
            ids = np.array([WARM_UP_IDS], dtype=np.int64)
            self(dict(input_ids=ids, attention_mask=np.ones_like(ids), token_type_ids=np.zeros_like(ids)), False)

    def __call__(self, inputs: dict[str, np.ndarray], keep_hidden: bool) -> ForwardOutput:
        result = self.request.infer({k: v for k, v in inputs.items() if k in self.inputs})
        return self._output(result[self.output], inputs, keep_hidden)

    def start(self, inputs: dict[str, np.ndarray], keep_hidden: bool) -> Callable[[], ForwardOutput]:
        """The same pass begun on OpenVINO's own threads (it holds no GIL while it runs); the returned call waits
        for it. Same compiled model, same inputs: the same vectors as `__call__`."""
        with self._requests_lock:
            request = self._idle_requests.pop() if self._idle_requests else self.compiled.create_infer_request()
        request.start_async({k: v for k, v in inputs.items() if k in self.inputs})

        def finish() -> ForwardOutput:
            try:
                request.wait()
                return self._output(request.get_tensor(self.output).data, inputs, keep_hidden)
            finally:
                with self._requests_lock:
                    self._idle_requests.append(request)

        return finish

    @staticmethod
    def _output(hidden_states: np.ndarray, inputs: dict[str, np.ndarray], keep_hidden: bool) -> ForwardOutput:
        hidden = np.asarray(hidden_states, dtype=np.float32)  # the request's own buffer: copied if kept
        return ForwardOutput(numpy_mean_pool(hidden, inputs["attention_mask"]), hidden.copy() if keep_hidden else None)


def openvino_forward(config: EncoderConfig, model_path: Path) -> tuple[ForwardPass, str, str]:
    """The forward pass over the checkpoint's ONNX export, the export's short hash and the precision it runs in:
    both join the encoder's identity."""
    exported = cpu_export(config, model_path)
    forward = OpenVinoForward(config, exported.path)
    return forward, exported.sha[:EXPORT_SHA_CHARS], forward.precision

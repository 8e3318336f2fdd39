"""An encoder's identity (`model_id`): the checkpoint, the numeric runtime (ONNX Runtime, OpenVINO or PyTorch), the
ONNX export's hash and OpenVINO's inference precision, written into and parsed back from one string, so caches,
stored token vectors and snapshots never mix vectors of two numeric paths (the encoder itself:
semantica/runtime/encoder.py)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TypeVar

ONNX_SUFFIX = "+onnx."  # + the first EXPORT_SHA_CHARS of the export's sha256
OPENVINO_SUFFIX = "+openvino-"  # + the inference precision, ".", the export's sha prefix
EXPORT_SHA_CHARS = 12


_Setting = TypeVar("_Setting", bound=enum.Enum)


def _parse_setting(kind: type[_Setting], name: str, setting: str) -> _Setting:
    """`name` as a member of `kind`, else a ValueError that names the setting and its choices."""
    try:
        return kind(name)
    except ValueError:
        raise ValueError(f"encoder.{setting} must be one of {[m.value for m in kind]}, got {name!r}") from None


class Runtime(enum.Enum):
    """Which library runs the forward pass."""

    ONNX = "onnx"
    OPENVINO = "openvino"
    TORCH = "torch"

    @staticmethod
    def parse(name: str) -> Runtime:
        return _parse_setting(Runtime, name, "runtime")


@dataclass(frozen=True)
class RuntimeIdentity:
    """What an encoder identity (`model_id`) says about the numbers behind it."""

    checkpoint: str
    runtime: Runtime
    export_sha: str = ""  # ONNX and OpenVINO (which runs the same export): the export's sha256 prefix
    precision: str = ""  # OpenVINO only: the precision it infers in (bf16 where the CPU has it, else f32)

    @property
    def model_id(self) -> str:
        if self.runtime is Runtime.ONNX:
            return self.checkpoint + ONNX_SUFFIX + self.export_sha
        if self.runtime is Runtime.OPENVINO:
            return f"{self.checkpoint}{OPENVINO_SUFFIX}{self.precision}.{self.export_sha}"
        return self.checkpoint

    @property
    def runtime_name(self) -> str:
        """What a manifest records: torch, onnx or openvino."""
        return self.runtime.value


def parse_model_id(model_id: str) -> RuntimeIdentity:
    """The runtime an encoder identity names (no suffix: the torch runtime)."""
    head, found, sha = model_id.rpartition(ONNX_SUFFIX)
    if found and head:
        return RuntimeIdentity(head, Runtime.ONNX, sha)
    head, found, tail = model_id.rpartition(OPENVINO_SUFFIX)
    precision, dot, sha = tail.partition(".")
    if found and head and dot and precision and sha:
        return RuntimeIdentity(head, Runtime.OPENVINO, sha, precision)
    return RuntimeIdentity(model_id, Runtime.TORCH)


def checkpoint_of(model_id: str) -> str:
    """The checkpoint id of an encoder identity."""
    return parse_model_id(model_id).checkpoint

"""An encoder's identity (`model_id`): the checkpoint, the numeric runtime (ONNX Runtime or PyTorch), the int8 mode
and the ONNX export's hash, written into and parsed back from one string, so caches, stored token vectors and
snapshots never mix vectors of two numeric paths (the encoder itself: semantica/encoder.py)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TypeVar

INT8_SUFFIX = "+int8pc"  # torch, per-channel weight scales
LEGACY_INT8_SUFFIX = "+int8"  # per-tensor (cosine ~0.93 to fp32): no longer built; its snapshots are refused
ONNX_SUFFIX = "+onnx."  # + the first EXPORT_SHA_CHARS of the export's sha256
ONNX_INT8_SUFFIX = "+onnx-int8."  # per-row activation scales (semantica/onnx_rows.py)
ONNX_INT8_TEXT_SUFFIX = "+onnx-int8-text."  # ORT's per-tensor graph, one text a forward pass
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
    TORCH = "torch"

    @staticmethod
    def parse(name: str) -> Runtime:
        return _parse_setting(Runtime, name, "runtime")


class Int8Scales(enum.Enum):
    """How the ONNX int8 graph scales its activations; both keep a text's vector independent of its batch."""

    ROW = "row"  # per token row (semantica/onnx_rows.py): any batching
    TEXT = "text"  # ORT's per-tensor graph, fed one text per forward pass: its one scale is then the text's

    @staticmethod
    def parse(name: str) -> Int8Scales:
        return _parse_setting(Int8Scales, name, "int8_scales")


@dataclass(frozen=True)
class RuntimeIdentity:
    """What an encoder identity (`model_id`) says about the numbers behind it."""

    checkpoint: str
    runtime: Runtime
    quantized: bool
    export_sha: str = ""  # ONNX only: the export's sha256 prefix
    per_text: bool = False  # ONNX int8 only: the per-tensor graph, one text per forward pass

    @property
    def model_id(self) -> str:
        if self.runtime is Runtime.ONNX:
            return self.checkpoint + self._onnx_suffix() + self.export_sha
        return self.checkpoint + (INT8_SUFFIX if self.quantized else "")

    def _onnx_suffix(self) -> str:
        if not self.quantized:
            return ONNX_SUFFIX
        return ONNX_INT8_TEXT_SUFFIX if self.per_text else ONNX_INT8_SUFFIX

    @property
    def runtime_name(self) -> str:
        """What a manifest records: torch, torch-int8, onnx, onnx-int8 or onnx-int8-text."""
        return self.runtime.value + ("-int8" if self.quantized else "") + ("-text" if self.per_text else "")

    @property
    def int8_scales(self) -> Int8Scales:
        return Int8Scales.TEXT if self.per_text else Int8Scales.ROW


def parse_model_id(model_id: str) -> RuntimeIdentity:
    """The runtime an encoder identity names (no suffix: the torch fp32 runtime)."""
    for suffix, quantized, per_text in ((ONNX_INT8_TEXT_SUFFIX, True, True), (ONNX_INT8_SUFFIX, True, False),
                                        (ONNX_SUFFIX, False, False)):
        head, found, sha = model_id.rpartition(suffix)
        if found and head:
            return RuntimeIdentity(head, Runtime.ONNX, quantized, sha, per_text)
    if model_id.endswith(INT8_SUFFIX):
        return RuntimeIdentity(model_id[: -len(INT8_SUFFIX)], Runtime.TORCH, True)
    return RuntimeIdentity(model_id, Runtime.TORCH, False)


def split_runtime(model_id: str) -> tuple[str, bool]:
    """`(checkpoint id, quantized)` of an encoder identity."""
    identity = parse_model_id(model_id)
    return identity.checkpoint, identity.quantized

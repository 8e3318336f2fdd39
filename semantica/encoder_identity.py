"""An encoder's identity (`model_id`): the checkpoint, the numeric runtime (ONNX Runtime or PyTorch) and the ONNX
export's hash, written into and parsed back from one string, so caches, stored token vectors and
snapshots never mix vectors of two numeric paths (the encoder itself: semantica/runtime/encoder.py)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TypeVar

ONNX_SUFFIX = "+onnx."  # + the first EXPORT_SHA_CHARS of the export's sha256
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


@dataclass(frozen=True)
class RuntimeIdentity:
    """What an encoder identity (`model_id`) says about the numbers behind it."""

    checkpoint: str
    runtime: Runtime
    export_sha: str = ""  # ONNX only: the export's sha256 prefix

    @property
    def model_id(self) -> str:
        if self.runtime is Runtime.ONNX:
            return self.checkpoint + ONNX_SUFFIX + self.export_sha
        return self.checkpoint

    @property
    def runtime_name(self) -> str:
        """What a manifest records: torch or onnx."""
        return self.runtime.value


def parse_model_id(model_id: str) -> RuntimeIdentity:
    """The runtime an encoder identity names (no suffix: the torch runtime)."""
    head, found, sha = model_id.rpartition(ONNX_SUFFIX)
    if found and head:
        return RuntimeIdentity(head, Runtime.ONNX, sha)
    return RuntimeIdentity(model_id, Runtime.TORCH)


def checkpoint_of(model_id: str) -> str:
    """The checkpoint id of an encoder identity."""
    return parse_model_id(model_id).checkpoint

"""One-time ONNX export of a transformers encoder checkpoint, cached by the hash of its weights.

torch runs here and only here (and in training): the export is made once per checkpoint and then
every process loads the `.onnx` file with ONNX Runtime. The export directory is keyed by the source
weights' sha256 and the export recipe's version, so new weights or a new recipe never reuse an old
graph; each `.onnx` has a `.sha256` sidecar, the export's identity recorded in snapshot manifests.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

EXPORT_RECIPE = 1  # bump when the graph changes (inputs, opset, attention): old exports are not reused
OPSET = 17
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT_NAME = "last_hidden_state"
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "config.json")
HASH_CHUNK_BYTES = 1 << 20


class ExportError(RuntimeError):
    """The checkpoint could not be exported to ONNX; the message says which step failed."""


@dataclass(frozen=True)
class ExportedModel:
    """An ONNX graph on disk and the sha256 of its bytes (what a manifest records)."""

    path: Path
    sha: str


def default_export_dir() -> Path:
    """`$XDG_CACHE_HOME/semantica/onnx` (else `~/.cache/...`): shared by every repository and process."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "semantica" / "onnx"


def _file_sha(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(HASH_CHUNK_BYTES):
            digest.update(block)
    return digest.hexdigest()


def weights_sha(model_path: Path, export_root: Path) -> str:
    """sha256 over the checkpoint's weight and config files, memoised by (path, size, mtime) so a cold
    process does not re-read 90 MB of weights to find its export."""
    files = [model_path / name for name in WEIGHT_FILES if (model_path / name).exists()]
    if not any(f.name != "config.json" for f in files):
        raise ExportError(f"no model.safetensors or pytorch_model.bin in {model_path}: nothing to export")
    stamp = "|".join(f"{f.resolve()}:{f.stat().st_size}:{f.stat().st_mtime_ns}" for f in files)
    memo = export_root / "weights-sha.json"
    known: dict[str, str] = {}
    if memo.exists():
        try:
            known = json.loads(memo.read_text())
        except (OSError, ValueError):
            known = {}
    if stamp in known:
        return known[stamp]
    digest = hashlib.sha256()
    for f in files:
        digest.update(f.name.encode())
        digest.update(_file_sha(f).encode())
    known[stamp] = digest.hexdigest()
    _atomic_write(memo, json.dumps(known, indent=1).encode())
    return known[stamp]


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        os.fchmod(handle.fileno(), 0o644)  # exports are shared by every process of this user
    os.replace(tmp, path)


def _published(onnx_path: Path) -> ExportedModel | None:
    sidecar = onnx_path.with_suffix(".sha256")
    if onnx_path.exists() and sidecar.exists():
        return ExportedModel(onnx_path, sidecar.read_text().strip())
    return None


def _publish(tmp_onnx: Path, onnx_path: Path) -> ExportedModel:
    """Sidecar first, graph last: a reader that sees the graph also sees its hash."""
    sha = _file_sha(tmp_onnx)
    _atomic_write(onnx_path.with_suffix(".sha256"), sha.encode())
    os.replace(tmp_onnx, onnx_path)
    return ExportedModel(onnx_path, sha)


def export_directory(model_path: Path, export_root: Path) -> Path:
    return export_root / f"{weights_sha(model_path, export_root)[:16]}-r{EXPORT_RECIPE}"


def ensure_export(model_path: Path, export_root: Path) -> ExportedModel:
    """The fp32 ONNX graph of `model_path`, exported on first use."""
    directory = export_directory(model_path, export_root)
    return _published(directory / "model.onnx") or _export_fp32(model_path, directory / "model.onnx")


def _export_fp32(model_path: Path, onnx_path: Path) -> ExportedModel:
    """Trace the encoder with dynamic batch and sequence axes. Eager attention: the traced graph is plain
    MatMul/Softmax (ORT's session optimisations fuse GELU and some MatMuls, not the attention; its BERT fusions
    measured no faster here: docs/fast.md); token_type_ids is an input (BERT adds its embedding)."""
    import warnings

    import torch
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(model_path))
        model = AutoModel.from_pretrained(str(model_path), attn_implementation="eager").eval()
    except Exception as exc:  # transformers raises many types; all mean "cannot load"
        raise ExportError(f"cannot load {model_path} for export: {exc}") from exc

    class HiddenStates(torch.nn.Module):
        def __init__(self, encoder: torch.nn.Module) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    token_type_ids: torch.Tensor) -> torch.Tensor:
            return self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                                token_type_ids=token_type_ids).last_hidden_state

    sample = tokenizer(["def example(a, b): return a + b", "short"], padding=True, return_tensors="pt")
    axes = {name: {0: "batch", 1: "sequence"} for name in (*INPUT_NAMES, OUTPUT_NAME)}
    onnx_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = onnx_path.with_name(f".{onnx_path.name}.{os.getpid()}.tmp")
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # tracer warnings about python control flow on shapes
            torch.onnx.export(HiddenStates(model), tuple(sample[name] for name in INPUT_NAMES), str(tmp),
                              input_names=list(INPUT_NAMES), output_names=[OUTPUT_NAME], dynamic_axes=axes,
                              opset_version=OPSET, dynamo=False)
    except Exception as exc:
        tmp.unlink(missing_ok=True)
        raise ExportError(f"ONNX export of {model_path} failed: {exc}") from exc
    return _publish(tmp, onnx_path)



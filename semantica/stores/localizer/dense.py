"""A dense function channel: the top of a function ranking re-ranked by its reciprocal-rank fusion with the
order a code-trained encoder's cosine gives the same functions.

MiniLM's cosine costs as such a channel (dev, read-only: function MRR 32.8 -> 28.9) while the encoder fine-tuned on
commits of public repositories (`models/encoder-commits-v3`) gains: the channel names its own model,
independent of the index's encoder. The query path (`serving/localizer/dense.py`) and the dev report
(`lab/eval/dense_rerank.py`) both fuse with `DenseFusion` (functions, and files by `file_cosines`) and encode
`function_text`, so the two score the same thing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from semantica.config import EncoderConfig, LocalizerConfig
from semantica.languages import is_test_path
from semantica.languages.spans import file_spans, source_lines
from semantica.stores.function_keys import function_key
from semantica.stores.localizer.models import model_root


def function_text(lines: Sequence[str], start: int, end: int) -> str:
    """What the encoder reads for a function: its source lines `start`..`end` (1-based, inclusive), the slice the
    commit pairs it was trained on hold (`FunctionSpan.source`, jobs/train/pairs.py; the tokenizer cuts at
    `max_length`)."""
    return source_lines(lines, start, end)


def channel_keys(keys: Sequence[str]) -> list[str]:
    """The function keys (`path::name`) the channel gives a cosine, or the file paths whose functions it encodes:
    all but test code's (they keep their ranking term only and are never encoded: neutral on the corpus, a third
    less encoding)."""
    return [key for key in keys if not is_test_path(key.partition("::")[0])]


def function_sources(path: str, text: str) -> dict[str, str]:
    """Function key -> its `function_text`, for every outer function and method of one source file (any language with
    function spans, by its path): the spans and keys the localizer's snapshot holds (semantica/stores/localizer/blobcache.py
    parses with the same `function_spans`)."""
    lines = text.split("\n")
    return {function_key(path, s.qualname): s.source(lines) for s in file_spans(path, text)}


@dataclass(frozen=True)
class DenseFusion:
    """How the channel joins a ranking: its top `depth` keys re-ordered by `1/(rrf_k + rank)` in the ranking plus
    `weight/(rrf_k + rank)` in the cosine order (ranks within that head); the others keep their places."""

    depth: int
    rrf_k: float
    weight: float

    def fuse(self, order: Sequence[str], cosine: dict[str, float], fixed: frozenset[str] = frozenset()) -> list[str]:
        """`order`: the ranking; `cosine`: key -> cosine for the keys the channel could encode (a key without one
        keeps its ranking term only); `fixed`: keys whose cosine the channel is not trusted with, which keep their
        own place in its order too, so they neither rise nor sink against the others."""
        span, below = list(order[: self.depth]), list(order[self.depth:])
        by_cosine = iter(sorted((key for key in span if key in cosine and key not in fixed), key=lambda key: -cosine[key]))
        channel = [key if key in fixed else next(by_cosine, None) for key in span]
        score = {key: 1.0 / (self.rrf_k + n) for n, key in enumerate(span, 1)}
        for n, key in enumerate(channel, 1):
            if key is not None:
                score[key] += self.weight / (self.rrf_k + n)
        position = {key: n for n, key in enumerate(span)}
        return sorted(span, key=lambda key: (-score[key], position[key])) + below


def cosines(query: np.ndarray, keys: Sequence[str], vectors: np.ndarray) -> dict[str, float]:
    """key -> cosine of unit vectors (one row of `vectors` per key); `query`: one vector (or a one-row matrix)."""
    if not len(keys):
        return {}
    return dict(zip(keys, (vectors @ np.ravel(query)).astype(float).tolist()))


def file_cosines(head: Sequence[str], cosine: dict[str, float]) -> dict[str, float]:
    """path -> the best cosine among its functions in `head` (function keys `path::name`): the file channel's
    evidence, read from the cosines the function channel already computed."""
    best: dict[str, float] = {}
    for key in head:
        if key in cosine:
            path = key.partition("::")[0]
            best[path] = max(best.get(path, cosine[key]), cosine[key])
    return best


def text_sha(text: str) -> str:
    """The key a function's vector is kept under (in memory and in the stored `function_vectors`)."""
    return hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()


def channel_encoder_config(config: LocalizerConfig, index_encoder: EncoderConfig) -> EncoderConfig:
    """The channel's own encoder: `dense_model` (a relative path: the working directory, else the checkout that
    ships it) at `dense_max_length`, on the index encoder's runtime, device, threads and export cache (fp32: ORT int8
    lost on dev)."""
    path = model_root(config.dense_model)
    return EncoderConfig(model_path=str(path), model_id=path.name, max_length=config.dense_max_length,
                         query_max_length=config.dense_query_max_length, runtime=index_encoder.runtime,
                         export_dir=index_encoder.export_dir, device=index_encoder.device,
                         batch_tokens=index_encoder.batch_tokens, torch_threads=index_encoder.torch_threads)


@dataclass
class StoredFunctionVectors:
    """A snapshot's function vectors written at index time (`function_vectors` index kind): by function key, with
    the encoder identity (a reader never mixes models) and the source sha each was encoded from (the next build
    reuses a vector whose source is unchanged)."""

    model_id: str
    rows: dict[str, int]
    shas: list[str]
    vectors: np.ndarray  # float16, one unit row per key

    def vector(self, key: str) -> np.ndarray | None:
        row = self.rows.get(key)
        return self.vectors[row].astype(np.float32) if row is not None else None

"""A dense function channel: the top of a function ranking re-ranked by its reciprocal-rank fusion with the
order a code-trained encoder's cosine gives the same functions.

MiniLM's cosine costs as such a channel (dev, read-only: function MRR 32.8 -> 28.9) while the encoder fine-tuned on
commits of public repositories (`models/encoder-commits-v3`) gains: the channel names its own model,
independent of the index's encoder. The query path (`serving/core/localizer/dense.py`), the corpus study that
chooses its settings (`lab/localizer/function_dense.py`) and the dev report (`lab/eval/dense_rerank.py`) all fuse
with `DenseFusion` (functions, and files by `file_cosines`) and encode `function_text`, so the three score the same
thing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from semantica.config import EncoderConfig, LocalizerConfig
from semantica.granular import function_key
from semantica.languages import TEST_PATH
from semantica.languages.spans import file_spans, source_lines
from semantica.localizer.features import FUNCTION_FEATURES
from semantica.localizer.models import model_root

if TYPE_CHECKING:
    from semantica.encoder import Encoder


def function_text(lines: Sequence[str], start: int, end: int) -> str:
    """What the encoder reads for a function: its source lines `start`..`end` (1-based, inclusive), the slice the
    commit pairs it was trained on hold (`FunctionSpan.source`, jobs/train/pairs.py; the tokenizer cuts at
    `max_length`)."""
    return source_lines(lines, start, end)


def channel_keys(keys: Sequence[str], config: LocalizerConfig) -> list[str]:
    """The function keys (`path::name`) the channel gives a cosine, or the file paths whose functions it encodes:
    all, or without test code's when `dense_tests` is off (they keep their ranking term only, and are never
    encoded)."""
    if config.dense_tests:
        return list(keys)
    return [key for key in keys if not TEST_PATH.search(key.partition("::")[0])]


def function_sources(path: str, text: str) -> dict[str, str]:
    """Function key -> its `function_text`, for every outer function and method of one source file (any language with
    function spans, by its path): the spans and keys the localizer's snapshot holds (semantica/localizer/blobcache.py
    parses with the same `function_spans`)."""
    lines = text.split("\n")
    return {function_key(path, s.qualname): s.source(lines) for s in file_spans(path, text)}


@dataclass(frozen=True)
class DenseFusion:
    """How the channel joins a ranking: its keys from `start` to `depth` re-ordered by `1/(rrf_k + rank)` in the
    ranking plus `weight/(rrf_k + rank)` in the cosine order (ranks within that span); the others keep their places."""

    depth: int
    rrf_k: float
    weight: float
    start: int = 0

    def fuse(self, order: Sequence[str], cosine: dict[str, float]) -> list[str]:
        """`order`: the ranking; `cosine`: key -> cosine for the keys the channel could encode (a key without one
        keeps its ranking term only)."""
        above, span, below = list(order[: self.start]), list(order[self.start: self.depth]), list(order[self.depth:])
        dense = sorted((key for key in span if key in cosine), key=lambda key: -cosine[key])
        score = {key: 1.0 / (self.rrf_k + n) for n, key in enumerate(span, 1)}
        for n, key in enumerate(dense, 1):
            score[key] += self.weight / (self.rrf_k + n)
        position = {key: n for n, key in enumerate(span)}
        return above + sorted(span, key=lambda key: (-score[key], position[key])) + below


def function_fusions(config: LocalizerConfig) -> tuple[DenseFusion, ...]:
    """The function channel's stages, applied in turn: the head (the top `dense_depth`) and, with
    `dense_tail_depth`, the functions below it down to that depth, re-ranked among themselves (they can reach a top
    50, never the head)."""
    head = DenseFusion(config.dense_depth, config.dense_rrf_k, config.dense_weight)
    if config.dense_tail_depth <= config.dense_depth:
        return (head,)
    return head, DenseFusion(config.dense_tail_depth, config.dense_tail_rrf_k, config.dense_tail_weight,
                             start=config.dense_depth)


def fuse_stages(stages: Sequence[DenseFusion], order: Sequence[str], cosine: dict[str, float]) -> list[str]:
    """`order` after each stage in turn (`function_fusions`), over the same cosines."""
    fused = list(order)
    for stage in stages:
        fused = stage.fuse(fused, cosine)
    return fused


def cosines(query: np.ndarray, keys: Sequence[str], vectors: np.ndarray, pooling: str = "max") -> dict[str, float]:
    """key -> cosine of unit vectors (one row of `vectors` per key). `query`: one vector, or one row per window of
    a long query (`query_texts`), whose cosines join by `pooling` (`QUERY_POOLINGS`: their max or their mean)."""
    if not len(keys):
        return {}
    per_window = vectors @ np.atleast_2d(query).T
    pooled = per_window.max(axis=1) if pooling == "max" else per_window.mean(axis=1)
    return dict(zip(keys, pooled.astype(float).tolist()))


def query_texts(encoder: Encoder, query: str, config: LocalizerConfig) -> list[str]:
    """What the channel encodes of a query: the query itself (cut at `dense_query_max_length` tokens by the
    encoder), or with `dense_query_windows` > 1 its first windows of that length, so the title's window stays as it
    was trained and a stack trace or code further down is read too."""
    if config.dense_query_windows <= 1:
        return [query]
    return encoder.tokenizer.windows(query, config.dense_query_max_length, config.dense_query_windows)


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
    ships it) at `dense_max_length`, on the index encoder's runtime, device and export cache; in ORT int8 with
    `dense_int8_scales` activation scales when set (its own identity, so stored vectors never mix)."""
    path = model_root(config.dense_model)
    return EncoderConfig(model_path=str(path), model_id=path.name, max_length=config.dense_max_length,
                         query_max_length=config.dense_query_max_length, runtime=index_encoder.runtime,
                         export_dir=index_encoder.export_dir, device=index_encoder.device,
                         batch_tokens=index_encoder.batch_tokens, quantize_int8=bool(config.dense_int8_scales),
                         int8_scales=config.dense_int8_scales or index_encoder.int8_scales)


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


HEAD_RANKER_FEATURES = (*FUNCTION_FEATURES, "head_rank", "cosine", "cosine_rank")
HEAD_RANKER_FILE = "head.txt"


def head_columns(head: Sequence[str], cosine: Mapping[str, float]) -> list[tuple[float, float, float]]:
    """Per head function: its place (1 = first), its cosine and the cosine's rank among the head's (NaN: no vector)."""
    by_cosine = sorted((key for key in head if key in cosine), key=lambda key: -cosine[key])
    cosine_rank = {key: float(n) for n, key in enumerate(by_cosine, 1)}
    return [(float(n), cosine.get(key, np.nan), cosine_rank.get(key, np.nan)) for n, key in enumerate(head, 1)]


class HeadRankerError(ValueError):
    """The head ranker's model file is missing or was trained on other features."""


class HeadRanker:
    """The channel's head re-ranked by a LambdaRank model instead of `DenseFusion`: each function's localizer
    feature row (NaN for a function the localizer did not draw), its place in the head, its cosine and the cosine's
    rank within the head (NaN without a vector). Trained by `lab.localizer.function_dense --ranker-study
    --save-ranker` on out-of-fold cosines of the corpus (lab/notes/localizer.md "A learned ranker over the head")."""

    def __init__(self, model_dir: str) -> None:
        import lightgbm as lgb  # imports pandas: only where a head ranker is configured

        path = model_root(model_dir) / HEAD_RANKER_FILE
        if not path.is_file():
            raise HeadRankerError(f"localizer.dense_head_ranker: no {HEAD_RANKER_FILE} under {model_dir}")
        self.model = lgb.Booster(model_file=str(path))
        if tuple(self.model.feature_name()) != HEAD_RANKER_FEATURES:
            raise HeadRankerError(f"localizer.dense_head_ranker: {path} was trained on other features than this "
                                  f"code's ({len(self.model.feature_name())} against {len(HEAD_RANKER_FEATURES)})")

    def rows(self, head: Sequence[str], features: Mapping[str, np.ndarray], cosine: Mapping[str, float]) -> np.ndarray:
        missing = np.full(len(FUNCTION_FEATURES), np.nan, dtype=np.float32)
        return np.array([[*features.get(key, missing), *columns] for key, columns in zip(head, head_columns(head, cosine))],
                        dtype=np.float32).reshape(len(head), len(HEAD_RANKER_FEATURES))

    def order(self, head: Sequence[str], features: Mapping[str, np.ndarray], cosine: Mapping[str, float]) -> list[str]:
        """`head` best first by the model (equal scores keep their places)."""
        if not len(head):
            return []
        scores = self.model.predict(self.rows(head, features, cosine), num_threads=1)
        return [head[i] for i in np.argsort(-scores, kind="stable")]

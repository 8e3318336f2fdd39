"""Learning-to-rank (the `ltr` reranker): reorder the fused hits with a LightGBM ranker trained offline.
Measured in leave-one-repository-out (+0.10 NDCG@10) but the only labels are our own eval sets, so the product
ships without it (lab/README.md). Import this module, set `LtrStage.settings` (the model directory) and put `ltr`
first in `rerank.order`.

`semantica mine` logs each fused hit's feature vector (`semantica.feature_schema.FEATURE_NAMES`) with a
relevance label and the hit's path, symbol and kind; `python -m lab.train.ltr` fits a LightGBM LambdaRank
model and writes a model directory. The model sees `LTR_FEATURE_NAMES`: the 18 fusion features plus
context features that `LtrFeaturizer` derives from the hit and the query (test path, chunk kind,
whether the query names the hit's symbol or path, intent probabilities, query length) - the same
code at training and at serving time. This stage loads the model and, between fusion and late
interaction, re-scores the first `ltr.top_n` fused hits:

    raw(c)    = model(features(c) + context(c, query))
    score(c)  = floor + (1 - floor) * (raw(c) - min raw) / (max raw - min raw)     (head, in [floor, 1])
    score(c)  = floor * fused(c) / max fused of the tail                         (tail, below the head)

so later stages that blend `score` with their own (late interaction normalises by the top score)
see positive, ordered values. Ties keep the fused order. The raw model value is the hit's `scores["ltr"]`.

A model directory records the feature schema version it was trained on (`semantica.feature_schema`); loading
one made under another version, or with other feature names, is an `LtrModelError` that says to retrain.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from semantica.feature_schema import FEATURE_NAMES, FEATURE_SCHEMA_VERSION
from semantica.hits import ChunkMeta, Hit
from semantica.languages import is_test_path
from semantica.schema import Chunk, ChunkKind
from serving.core.fusion import ExpansionMatcher
from serving.core.intent import INTENTS, IntentResult
from serving.rerankers.base import RerankInput, rescored
from serving.rerankers.registry import register_reranker

CONTEXT_FEATURE_NAMES: tuple[str, ...] = (
    "is_test",                                   # 1 for a test file
    *(f"kind_{k.value}" for k in ChunkKind),     # one-hot chunk kind
    "names_symbol",                              # the query names the hit's symbol
    "names_path",                                # the query names the hit's path or module
    *(f"intent_{i.value}" for i in INTENTS),     # the query's intent probabilities
    "query_words",                               # log(1 + words in the query)
)
LTR_FEATURE_NAMES: tuple[str, ...] = FEATURE_NAMES + CONTEXT_FEATURE_NAMES


@dataclass(frozen=True)
class LtrSettings:
    """Which model reorders how much of the fused list."""

    model_path: str = ""  # the directory `python -m lab.train.ltr --out` wrote (model.txt + ltr.json)
    top_n: int = 50  # fused hits the model reorders (the rest keep their fused order, below them)
    score_floor: float = 0.1  # reordered hits get scores in [score_floor, 1] so later stages can blend them


class LtrFeaturizer:
    """The model's input row for a hit of one query: fusion features + context features."""

    def __init__(self, query: str, intent: IntentResult) -> None:
        self.matcher = ExpansionMatcher(intent.expansions)
        self.query_part = [*(intent.p(i) for i in INTENTS), math.log1p(len(query.split()))]

    def row(self, fusion_features: Sequence[float], path: str, symbol: str, kind: str) -> list[float]:
        match = self.matcher.match(ChunkMeta(symbol=symbol, path=path))
        kinds = [float(kind == k.value) for k in ChunkKind]
        return [*map(float, fusion_features), float(is_test_path(path)), *kinds,
                float(match.startswith("symbol")), float(match.startswith(("path", "module"))), *self.query_part]

MODEL_FILE = "model.txt"
META_FILE = "ltr.json"
LTR_FORMAT = 1
SCHEMA_KEY = "feature_schema_version"
"""The `ltr.json` field that names the feature schema version the model was trained on."""


LTR_STAGE = "ltr"


class LtrModelError(RuntimeError):
    """The model directory is missing, incomplete or made for other features; the message says what to do."""


@dataclass(frozen=True)
class LtrModel:
    """A trained ranker: the LightGBM booster plus the feature names it was trained on."""

    booster: Any
    feature_names: tuple[str, ...]
    meta: dict[str, Any]

    @staticmethod
    def load(directory: str | Path) -> LtrModel:
        """Load `model.txt` + `ltr.json`; refuse a model whose features are not this build's."""
        import lightgbm

        root = Path(directory)
        model_file, meta_file = root / MODEL_FILE, root / META_FILE
        if not model_file.is_file() or not meta_file.is_file():
            raise LtrModelError(f"no LTR model in {root} (expected {MODEL_FILE} and {META_FILE}); "
                                f"train one with `python -m lab.train.ltr --data MINED --out {root}`")
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
        names = tuple(meta.get("feature_names") or ())
        version = meta.get(SCHEMA_KEY)
        if version != FEATURE_SCHEMA_VERSION:
            raise LtrModelError(f"the LTR model in {root} was trained on feature schema version {version} "
                                f"({SCHEMA_KEY} in {META_FILE}); this build uses version {FEATURE_SCHEMA_VERSION}: "
                                f"train again with `python -m lab.train.ltr --out {root}`")
        if meta.get("format") != LTR_FORMAT or names != LTR_FEATURE_NAMES:
            raise LtrModelError(f"the LTR model in {root} was trained on other features "
                                f"({len(names)} named, format {meta.get('format')}); this build uses "
                                f"{len(LTR_FEATURE_NAMES)} (format {LTR_FORMAT}): train again")
        return LtrModel(lightgbm.Booster(model_file=str(model_file)), names, meta)

    def predict(self, features: np.ndarray) -> np.ndarray:
        """Raw ranking scores, one per row of a (n, len(LTR_FEATURE_NAMES)) matrix."""
        if features.ndim != 2 or features.shape[1] != len(self.feature_names):
            raise ValueError(f"expected a (n, {len(self.feature_names)}) feature matrix, got {features.shape}")
        return np.asarray(self.booster.predict(features), dtype=np.float64)


class LtrReranker:
    """Re-scores the head of the fused list with an `LtrModel` (formula in the module docstring)."""

    def __init__(self, config: LtrSettings, model: LtrModel) -> None:
        self.config = config
        self.model = model

    @staticmethod
    def from_settings(config: LtrSettings) -> LtrReranker:
        if not config.model_path:
            raise LtrModelError("LtrStage.settings.model_path is empty: set it to the directory "
                                "`python -m lab.train.ltr --out` wrote")
        return LtrReranker(config, LtrModel.load(config.model_path))

    def rerank(self, hits: list[Hit], chunks: dict[str, Chunk], query: str, intent: IntentResult) -> list[Hit]:
        head, tail = hits[: self.config.top_n], hits[self.config.top_n:]
        if not head:
            return list(hits)
        featurizer = LtrFeaturizer(query, intent)
        rows = []
        for hit in head:
            chunk = chunks.get(hit.chunk_id) or hit.chunk
            path, symbol, kind = (chunk.path, chunk.symbol or "", chunk.kind) if chunk else ("", "", "")
            rows.append(featurizer.row(hit.features, path, symbol, kind))
        raw = self.model.predict(np.asarray(rows, dtype=np.float64))
        low, high = float(raw.min()), float(raw.max())
        spread = high - low
        floor = self.config.score_floor
        ordered: list[tuple[float, int, Hit]] = []
        for position, (hit, value) in enumerate(zip(head, raw)):
            score = floor + (1.0 - floor) * ((float(value) - low) / spread if spread > 0 else 1.0)
            ordered.append((score, position, rescored(
                hit, LTR_STAGE, float(value), score=score,
                explanation=f"{hit.explanation}; LTR {float(value):.3f} -> {score:.4f}")))
        ordered.sort(key=lambda item: (-item[0], item[1]))
        top_tail = max((h.score for h in tail), default=0.0)
        rest = [rescored(h, LTR_STAGE, None, score=floor * (h.score / top_tail) if top_tail > 0 else 0.0) for h in tail]
        return [hit for _, _, hit in ordered] + rest


@register_reranker(LTR_STAGE)
class LtrStage:
    """The registered stage: owns the trained model (loaded on first use) and runs where the pipeline runs;
    `settings` is the study's choice (a class attribute: the registry builds the stage from the pipeline)."""

    name, optional, deployed = LTR_STAGE, True, False
    settings = LtrSettings()

    def __init__(self, stages: Any) -> None:
        self.stages = stages

    @cached_property
    def model(self) -> LtrReranker:
        return LtrReranker.from_settings(self.settings)

    def warm_up(self) -> None:  # in `rerank.order` means on: a bad model path fails the deploy, not a request
        _ = self.model

    def wanted(self, given: RerankInput) -> bool:
        return True

    def rerank(self, hits: list[Hit], given: RerankInput) -> list[Hit]:
        return self.model.rerank(hits, given.chunks, given.request.query, given.intent)

"""Conditional cross-encoder reranking of the top hits (a local checkpoint, fully offline).

When it runs (`should_run`): the dominant intent is one of `intents` (flow, concept), OR the
query has at least `MIN_QUERY_WORDS` words, OR it contains one of `KEYWORDS` (why, how, explain,
trace) as a whole word. Any one condition is enough: each marks a query whose wording matters more
than its identifiers. Whether the stage exists at all is `CrossEncoderConfig.enabled` (the
pipeline's concern).

Scoring of the first `top_n` hits:

    score = CROSS_WEIGHT * sigmoid(logit) + FUSED_WEIGHT * prev / max(prev over those hits)

where `prev` is the hit's incoming `score` (the fused score, or the late-interaction score when
that stage ran before). A model with two labels uses logit[1] - logit[0] (so sigmoid = softmax p1).
The re-scored hits are sorted by that score (ties keep their order); hits beyond `top_n` follow
unchanged. Any load or inference failure raises `CrossEncoderError`: the request fails loudly.

`CrossEncoderStage` is the registered reranker: it owns the checkpoint (loaded on first use, or in
`warm_up`) and records the logit in `Hit.scores["cross_encoder"]`.
"""

from __future__ import annotations

import math
import os
import re
from functools import cached_property
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from semantica.config import CrossEncoderConfig  # noqa: E402
from semantica.hits import Hit  # noqa: E402
from semantica.schema import Chunk  # noqa: E402
from serving.core.intent import Intent, IntentResult  # noqa: E402
from serving.rerankers.base import RerankInput, flag, rescored  # noqa: E402
from serving.rerankers.registry import register_reranker  # noqa: E402

_WORD = re.compile(r"\w+")
CROSS_STAGE = "cross_encoder"
MIN_QUERY_WORDS = 6  # the gate: a query of this many words runs the stage whatever its intent
KEYWORDS = frozenset({"why", "how", "explain", "trace"})  # ... and so does one holding one of these whole words
CROSS_WEIGHT = 0.8  # a re-scored hit's score: CROSS_WEIGHT x the cross-encoder's probability ...
FUSED_WEIGHT = 0.2  # ... + FUSED_WEIGHT x its incoming score over the head's best

CHARS_PER_TOKEN_CAP = 16
"""Texts are cut to max_length x this many characters before tokenizing: no tokenizer piece is
that long on average, so nothing the model would see is lost, and huge chunks stay cheap."""
QUERY_SHARE = 0.5
"""A query keeps at most this share of max_length tokens; chunk text gets the rest."""


class CrossEncoderError(RuntimeError):
    """The cross-encoder could not be loaded or could not score; the message says why."""


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


class CrossEncoderReranker:
    """`rerank(query, hits, chunks, top_n)` -> hits, the first `top_n` re-scored by the model."""

    def __init__(
        self,
        model_path: str,
        device: str = "auto",
        batch_size: int = 16,
        max_length: int = 384,
        config: CrossEncoderConfig | None = None,
    ) -> None:
        self.config = config or CrossEncoderConfig()
        if batch_size < 1:
            raise CrossEncoderError(f"cross_encoder.batch_size must be >= 1, got {batch_size}")
        if max_length < 8:
            raise CrossEncoderError(f"cross_encoder.max_length must be >= 8, got {max_length}")
        self.batch_size = batch_size
        self.max_length = max_length
        self.model_path = Path(model_path).expanduser() if model_path else None
        if self.model_path is None or not (self.model_path / "config.json").exists():
            raise CrossEncoderError(
                f"cross_encoder.model_path={model_path!r} is not a local transformers checkpoint "
                "(no config.json there); set it to a sequence-classification model directory "
                "or disable the stage (cross_encoder.enabled=false)"
            )
        try:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer

            from semantica.runtime.encoder import choose_device

            self.device = choose_device(device)
            self.tokenizer = AutoTokenizer.from_pretrained(str(self.model_path), local_files_only=True)
            self.model = (
                AutoModelForSequenceClassification.from_pretrained(
                    str(self.model_path), local_files_only=True
                )
                .to(self.device)
                .eval()
            )
        except Exception as exc:  # transformers raises many types; all mean "cannot load"
            raise CrossEncoderError(f"cannot load cross-encoder from {self.model_path}: {exc}") from exc
        self.num_labels = int(self.model.config.num_labels)
        if self.num_labels not in (1, 2):
            raise CrossEncoderError(
                f"cross-encoder at {self.model_path} has {self.num_labels} labels; "
                "expected 1 (a relevance logit) or 2 (not relevant / relevant)"
            )
        self._torch = torch

    @classmethod
    def from_config(cls, config: CrossEncoderConfig) -> CrossEncoderReranker:
        return cls(config.model_path, config.device, config.batch_size, config.max_length, config)

    # -- gating ---------------------------------------------------------------------------------

    def should_run(self, query: str, intent: IntentResult | Intent | str | None) -> bool:
        """See the module docstring: intent in `intents` OR enough words OR a keyword."""
        return should_run(self.config, query, intent)

    # -- scoring --------------------------------------------------------------------------------

    def score_pairs(self, query: str, texts: list[str]) -> list[float]:
        """Raw relevance logits for (query, text) pairs, batched and truncated to max_length."""
        if not texts:
            return []
        char_cap = self.max_length * CHARS_PER_TOKEN_CAP
        query = self._cut_query(query or "")
        texts = [t[:char_cap] for t in texts]
        torch = self._torch
        logits: list[float] = []
        try:
            for start in range(0, len(texts), self.batch_size):
                batch = texts[start : start + self.batch_size]
                encoded = self.tokenizer(
                    [query] * len(batch), batch, padding=True, truncation="only_second",
                    max_length=self.max_length, return_tensors="pt",
                ).to(self.device)
                with torch.inference_mode():
                    out = self.model(**encoded).logits.float()
                if self.num_labels == 2:
                    values = out[:, 1] - out[:, 0]
                else:
                    values = out[:, 0]
                logits.extend(float(v) for v in values.cpu())
        except Exception as exc:
            raise CrossEncoderError(f"cross-encoder inference failed: {exc}") from exc
        if any(math.isnan(v) for v in logits):
            raise CrossEncoderError("cross-encoder produced NaN scores")
        return logits

    def _cut_query(self, query: str) -> str:
        """The query cut to QUERY_SHARE x max_length tokens, so `only_second` truncation of the
        chunk text always suffices."""
        limit = max(1, int(self.max_length * QUERY_SHARE))
        query = query[: limit * CHARS_PER_TOKEN_CAP]
        try:
            encoded = self.tokenizer(
                query, add_special_tokens=False, truncation=True, max_length=limit,
                return_offsets_mapping=True,
            )
        except (NotImplementedError, TypeError, ValueError) as exc:
            raise CrossEncoderError(
                f"the cross-encoder tokenizer at {self.model_path} must be a fast tokenizer: {exc}"
            ) from exc
        offsets = encoded["offset_mapping"]
        return query[: offsets[-1][1]] if offsets else query

    def rerank(
        self, query: str, hits: list[Hit], chunks: dict[str, Chunk], top_n: int | None = None
    ) -> list[Hit]:
        """Re-score the first `top_n` (default config.top_n) hits; the rest follow unchanged."""
        n = self.config.top_n if top_n is None else top_n
        if n < 0:
            raise ValueError(f"top_n must be >= 0, got {n}")
        head, tail = hits[:n], hits[n:]
        if not head:
            return list(hits)
        resolved: list[Chunk] = []
        for hit in head:
            chunk = chunks.get(hit.chunk_id) or hit.chunk
            if chunk is None:
                raise CrossEncoderError(f"no chunk text for hit {hit.chunk_id!r}")
            resolved.append(chunk)
        logits = self.score_pairs(query, [c.embedding_text() for c in resolved])
        top_prev = max(h.score for h in head)
        cw, fw = CROSS_WEIGHT, FUSED_WEIGHT
        ordered = []
        for position, (hit, chunk, logit) in enumerate(zip(head, resolved, logits)):
            prob = _sigmoid(logit)
            prev_norm = hit.score / top_prev if top_prev > 0 else 0.0
            score = cw * prob + fw * prev_norm
            ordered.append((score, position, rescored(
                hit, CROSS_STAGE, logit, score=score, chunk=chunk,
                explanation=f"{hit.explanation}; cross {prob:.3f} (logit {logit:.2f}) -> {score:.4f}",
            )))
        ordered.sort(key=lambda item: (-item[0], item[1]))
        return [hit for _, _, hit in ordered] + list(tail)


def should_run(
    config: CrossEncoderConfig, query: str, intent: IntentResult | Intent | str | None
) -> bool:
    """The gate, usable without loading a model (the pipeline asks before loading)."""
    if intent is not None:
        dominant = intent.dominant if isinstance(intent, IntentResult) else Intent.parse(intent)
        if dominant.value in {i.lower() for i in config.intents}:
            return True
    words = [w.lower() for w in _WORD.findall(query or "")]
    if len(words) >= MIN_QUERY_WORDS:
        return True
    return any(w in KEYWORDS for w in words)


@register_reranker(CROSS_STAGE)
class CrossEncoderStage:
    """The registered stage: the conditional cross-encoder; when configured and asked for, a failure fails the
    request. Owns the checkpoint; the Serve graph gives it its own deployment."""

    name, optional, deployed = CROSS_STAGE, False, True

    def __init__(self, stages: Any) -> None:
        self.config: CrossEncoderConfig = stages.config.cross_encoder

    @cached_property
    def model(self) -> CrossEncoderReranker:
        return CrossEncoderReranker.from_config(self.config)

    def warm_up(self) -> None:
        if self.config.enabled:  # a bad checkpoint fails the deploy, not the first request
            _ = self.model

    def wanted(self, given: RerankInput) -> bool:
        return (flag(given.request.cross_encoder, self.config.enabled)
                and should_run(self.config, given.request.query, given.intent))

    def rerank(self, hits: list[Hit], given: RerankInput) -> list[Hit]:
        return self.model.rerank(given.request.query, hits, given.chunks)

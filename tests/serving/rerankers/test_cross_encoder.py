"""Cross-encoder reranking through a tiny real BERT checkpoint written to disk and loaded back."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

from semantica.config import CrossEncoderConfig
from semantica.hits import Hit
from semantica.schema import Chunk
from serving.core.intent import Intent, IntentClassifier, IntentResult
from serving.rerankers.cross_encoder import CrossEncoderError, CrossEncoderReranker, should_run

WORDS = (
    "def return class import self retry backoff network call resize image table create user "
    "why how explain trace what who calls the a of to in is for with error config load"
).split()


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("tiny_cross_encoder")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, *"abcdefghijklmnopqrstuvwxyz(),.:=_"]
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(directory / "vocab.txt"))
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, num_labels=1, max_position_embeddings=512,
    )
    BertForSequenceClassification(config).eval().save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def reranker(model_dir: Path) -> CrossEncoderReranker:
    return CrossEncoderReranker(str(model_dir), device="cpu", batch_size=16, max_length=64)


def _chunks(n: int) -> list[Chunk]:
    texts = [
        "def retry(call):\n    return backoff(call)",
        "def resize(image):\n    return image",
        "class user:\n    def create(self): return table",
        "def load(config):\n    return config",
        "import error\nraise error",
        "def trace(call): return who",
        "def explain(): return what",
    ]
    return [
        Chunk.build("r", f"p/f{i}.py", "python", 1, 2, "function", f"f{i}", texts[i % len(texts)])
        for i in range(n)
    ]


def _hits(chunks: list[Chunk]) -> list[Hit]:
    return [Hit(chunk_id=c.chunk_id, score=1.0 / (i + 1), fused_score=1.0 / (i + 1))
            for i, c in enumerate(chunks)]


def test_loads_tiny_model(reranker: CrossEncoderReranker) -> None:
    assert reranker.num_labels == 1
    logits = reranker.score_pairs("how to retry a network call", ["def retry(call): return"])
    assert len(logits) == 1 and math.isfinite(logits[0])


def test_bad_path_raises(tmp_path: Path) -> None:
    with pytest.raises(CrossEncoderError, match="no config.json"):
        CrossEncoderReranker(str(tmp_path / "missing"))
    with pytest.raises(CrossEncoderError, match="no config.json"):
        CrossEncoderReranker("")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{ not json")
    with pytest.raises(CrossEncoderError, match="cannot load cross-encoder"):
        CrossEncoderReranker(str(broken))


def test_batching_gives_same_scores(model_dir: Path, reranker: CrossEncoderReranker) -> None:
    small = CrossEncoderReranker(str(model_dir), device="cpu", batch_size=2, max_length=64)
    texts = [c.embedding_text() for c in _chunks(5)]
    big_scores = reranker.score_pairs("why retry the call", texts)
    small_scores = small.score_pairs("why retry the call", texts)
    assert small_scores == pytest.approx(big_scores, abs=1e-5)


def test_truncation_of_long_chunk_and_long_query(reranker: CrossEncoderReranker) -> None:
    long_text = "def retry(call):\n" + "    return backoff(call)\n" * 5000
    (logit,) = reranker.score_pairs("retry", [long_text])
    assert math.isfinite(logit)
    (logit2,) = reranker.score_pairs("retry the network call " * 500, [long_text])
    assert math.isfinite(logit2)


def test_ordering_follows_blended_score(reranker: CrossEncoderReranker) -> None:
    chunks = _chunks(5)
    hits = _hits(chunks)
    query = "how do we retry a network call"
    out = reranker.rerank(query, hits, {c.chunk_id: c for c in chunks}, top_n=20)
    logits = reranker.score_pairs(query, [c.embedding_text() for c in chunks])
    expected = {
        c.chunk_id: 0.8 / (1 + math.exp(-logit)) + 0.2 * h.score / hits[0].score
        for c, h, logit in zip(chunks, hits, logits)
    }
    assert [h.chunk_id for h in out] == sorted(expected, key=lambda cid: -expected[cid])
    for hit in out:
        assert hit.score == pytest.approx(expected[hit.chunk_id], abs=1e-6)
        position = [c.chunk_id for c in chunks].index(hit.chunk_id)
        assert hit.scores["cross_encoder"] == pytest.approx(logits[position]) and hit.chunk is not None
        assert "cross" in hit.explanation


def test_top_n_and_edge_cases(reranker: CrossEncoderReranker) -> None:
    chunks = _chunks(6)
    hits = _hits(chunks)
    table = {c.chunk_id: c for c in chunks}
    assert reranker.rerank("q", [], {}) == []
    out = reranker.rerank("q", hits, table, top_n=3)
    assert {h.chunk_id for h in out[:3]} == {h.chunk_id for h in hits[:3]}
    assert out[3:] == hits[3:]
    assert len(reranker.rerank("q", hits[:2], table, top_n=20)) == 2  # fewer than top_n is fine
    assert reranker.rerank("q", hits, table, top_n=0) == hits
    with pytest.raises(CrossEncoderError, match="no chunk text"):
        reranker.rerank("q", [Hit(chunk_id="ghost", score=1.0, fused_score=1.0)], {})


def test_should_run_gate() -> None:
    cfg = CrossEncoderConfig()
    clf = IntentClassifier()
    assert should_run(cfg, "who calls register_hook", clf.classify("who calls register_hook"))
    assert should_run(cfg, "x", IntentResult.pure(Intent.CONCEPT))
    assert should_run(cfg, "register_hook retry", "flow")
    assert should_run(cfg, "why retry", IntentResult.pure(Intent.SYMBOL))  # keyword
    assert should_run(cfg, "Trace the retry", None)  # keyword, case-insensitive
    assert should_run(cfg, "a b c d e f", IntentResult.pure(Intent.CODE))  # >= 6 words
    assert not should_run(cfg, "JSONDecoder.raw_decode", clf.classify("JSONDecoder.raw_decode"))
    assert not should_run(cfg, "showcase however", IntentResult.pure(Intent.CODE))  # whole words
    assert not should_run(cfg, "", None)
    with pytest.raises(ValueError, match="known intents"):
        should_run(cfg, "q", "vibes")

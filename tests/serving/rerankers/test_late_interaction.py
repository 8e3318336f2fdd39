"""Late interaction with the real all-MiniLM-L6-v2 token embeddings and a real on-disk cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from semantica.config import EncoderConfig, LateInteractionConfig
from semantica.hits import Hit
from semantica.runtime.encoder import Encoder, shared_encoder
from semantica.schema import Chunk
from serving.rerankers.late_interaction import LateInteractionReranker, TokenEmbeddingCache, maxsim


class CountingEncoder:
    """A thin proxy over the real encoder that counts the texts it token-encodes."""

    def __init__(self, inner: Encoder) -> None:
        self.inner = inner
        self.config = inner.config
        self.token_texts: list[str] = []

    def encode_tokens(self, texts, max_length=None):
        self.token_texts.extend(texts)
        return self.inner.encode_tokens(texts, max_length)


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return shared_encoder(EncoderConfig())


def _chunk(path: str, symbol: str, content: str, start: int = 1) -> Chunk:
    n = content.count("\n") + 1
    return Chunk.build("repo", path, "python", start, start + n - 1, "function", symbol, content)


CHUNKS = [
    _chunk("net/retry.py", "retry_with_backoff",
           "def retry_with_backoff(fn, attempts=5):\n"
           "    \"\"\"Retry a failing network call with exponential backoff.\"\"\"\n"
           "    for i in range(attempts):\n        try:\n            return fn()\n"
           "        except ConnectionError:\n            time.sleep(2 ** i)"),
    _chunk("img/resize.py", "resize_image",
           "def resize_image(img, width, height):\n    \"\"\"Scale a picture to the given size.\"\"\"\n"
           "    return img.resize((width, height))"),
    _chunk("db/schema.py", "create_tables",
           "def create_tables(conn):\n    \"\"\"Create the SQL tables for users and orders.\"\"\"\n"
           "    conn.execute('CREATE TABLE users (id INTEGER PRIMARY KEY)')"),
]


def _hits(chunks: list[Chunk]) -> list[Hit]:
    # fused order deliberately puts the relevant chunk last, with close fused scores
    return [
        Hit(chunk_id=c.chunk_id, score=s, fused_score=s, explanation="fused")
        for c, s in zip(chunks, [0.0100, 0.0101, 0.0102])
    ][::-1]


def test_maxsim_math() -> None:
    q = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    d = np.array([[1.0, 0.0], [0.6, 0.8]], dtype=np.float32)
    assert maxsim(q, d) == pytest.approx((1.0 + 0.8) / 2)
    assert maxsim(q, np.zeros((0, 2), dtype=np.float32)) == 0.0


def test_maxsim_prefers_matching_chunk(encoder: Encoder) -> None:
    cfg = LateInteractionConfig(top_n=30, weight=0.9)
    reranker = LateInteractionReranker(cfg, encoder, TokenEmbeddingCache(None, 100))
    hits = _hits(CHUNKS)
    out = reranker.rerank(
        "retry a network request with exponential backoff", hits, {c.chunk_id: c for c in CHUNKS}
    )
    assert out[0].chunk_id == CHUNKS[0].chunk_id
    assert all("late_interaction" in h.scores for h in out)
    late = {h.chunk_id: h.scores["late_interaction"] for h in out}
    assert late[CHUNKS[0].chunk_id] > max(late[CHUNKS[1].chunk_id], late[CHUNKS[2].chunk_id])
    # the blend formula, checked on the winner
    top = out[0]
    expected = (1 - 0.9) * top.fused_score / 0.0102 + 0.9 * max(0.0, top.scores["late_interaction"])
    assert top.score == pytest.approx(expected)
    assert "late MaxSim" in top.explanation and top.chunk is not None
    assert [h.score for h in out] == sorted((h.score for h in out), reverse=True)


def test_hits_beyond_top_n_keep_their_order(encoder: Encoder) -> None:
    many = CHUNKS + [_chunk(f"x/f{i}.py", f"f{i}", f"def f{i}():\n    return {i}") for i in range(4)]
    hits = [Hit(chunk_id=c.chunk_id, score=1.0 / (i + 1), fused_score=1.0 / (i + 1))
            for i, c in enumerate(many)]
    reranker = LateInteractionReranker(LateInteractionConfig(top_n=2), encoder, TokenEmbeddingCache())
    out = reranker.rerank("anything", hits, {c.chunk_id: c for c in many})
    assert {h.chunk_id for h in out[:2]} == {h.chunk_id for h in hits[:2]}
    assert out[2:] == hits[2:]
    assert all("late_interaction" not in h.scores for h in out[2:])


def test_empty_and_missing_chunks(encoder: Encoder) -> None:
    reranker = LateInteractionReranker(LateInteractionConfig(), encoder, TokenEmbeddingCache())
    assert reranker.rerank("q", [], {}) == []
    ghost = Hit(chunk_id="ghost", score=0.5, fused_score=0.5)
    real = Hit(chunk_id=CHUNKS[0].chunk_id, score=0.4, fused_score=0.4)
    out = reranker.rerank("", [ghost, real], {CHUNKS[0].chunk_id: CHUNKS[0]})
    assert {h.chunk_id for h in out} == {"ghost", CHUNKS[0].chunk_id}
    assert "late_interaction" not in next(h for h in out if h.chunk_id == "ghost").scores


def test_disk_cache_round_trip(tmp_path: Path) -> None:
    cache = TokenEmbeddingCache(tmp_path, max_items=2, dtype="float16")
    sha = "ab" * 20
    array = np.random.default_rng(0).standard_normal((7, 384)).astype(np.float32)
    cache.put(sha, array)
    files = list(tmp_path.rglob("*.npy"))
    assert files == [tmp_path / "ab" / f"{sha}.npy"]
    assert np.load(files[0]).dtype == np.float16
    assert not list(tmp_path.rglob("*.tmp"))  # atomic write left no temp file
    fresh = TokenEmbeddingCache(tmp_path, max_items=2, dtype="float16")
    loaded = fresh.get(sha)
    assert loaded is not None and loaded.dtype == np.float32 and loaded.shape == (7, 384)
    np.testing.assert_allclose(loaded, array, atol=1e-2)
    assert sha in fresh and len(fresh) == 1
    assert fresh.get("cd" * 20) is None


def test_memory_lru_evicts_and_corrupt_file_is_a_miss(tmp_path: Path) -> None:
    cache = TokenEmbeddingCache(None, max_items=2)
    for key in ("aa", "bb", "cc"):
        cache.put(key, np.ones((1, 4), dtype=np.float32))
    assert len(cache) == 2 and cache.get("aa") is None and cache.get("cc") is not None
    disk = TokenEmbeddingCache(tmp_path, max_items=2)
    (tmp_path / "dd").mkdir()
    (tmp_path / "dd" / "dd11.npy").write_bytes(b"not a numpy file")
    assert disk.get("dd11") is None
    with pytest.raises(ValueError, match="hex sha"):
        disk.get("../../etc/passwd")
    with pytest.raises(ValueError, match="dtype"):
        TokenEmbeddingCache(None, 10, dtype="int8")


def test_cache_hit_avoids_reencoding(encoder: Encoder, tmp_path: Path) -> None:
    counting = CountingEncoder(encoder)
    cfg = LateInteractionConfig()
    reranker = LateInteractionReranker(cfg, counting, TokenEmbeddingCache(tmp_path, 100))
    assert len(reranker.document_tokens(CHUNKS + CHUNKS)) == len(CHUNKS)
    assert len(counting.token_texts) == len(CHUNKS)  # duplicates encoded once
    reranker.document_tokens(CHUNKS)
    assert len(counting.token_texts) == len(CHUNKS)  # the second call is served from the cache
    counting.token_texts.clear()
    chunks = {c.chunk_id: c for c in CHUNKS}
    first = reranker.rerank("resize a picture", _hits(CHUNKS), chunks)
    assert counting.token_texts == ["resize a picture"]  # only the query was encoded
    assert first[0].chunk_id == CHUNKS[1].chunk_id

    # a new process: empty memory, same directory -> still no document encoding
    counting2 = CountingEncoder(encoder)
    reranker2 = LateInteractionReranker(cfg, counting2, TokenEmbeddingCache(tmp_path, 100))
    second = reranker2.rerank("resize a picture", _hits(CHUNKS), chunks)
    assert counting2.token_texts == ["resize a picture"]
    assert [h.chunk_id for h in second] == [h.chunk_id for h in first]
    for a, b in zip(first, second):
        assert a.scores["late_interaction"] == pytest.approx(b.scores["late_interaction"], abs=1e-6)


def test_configured_model_path_loads_through_encoder(encoder: Encoder) -> None:
    cfg = LateInteractionConfig(model_path=str(encoder.model_path))
    reranker = LateInteractionReranker(cfg, None, TokenEmbeddingCache())
    assert reranker.encoder is not encoder
    assert reranker.encoder.model_path == encoder.model_path
    with pytest.raises(Exception, match="config.json"):
        LateInteractionReranker(LateInteractionConfig(model_path="/nonexistent/colbert"))


def test_a_repository_whose_token_vectors_are_building_has_its_chunks_scored_by_nothing(encoder: Encoder) -> None:
    """Two repositories in one head: the complete one's chunks are encoded and scored as ever, the one still
    building its token vectors (`index.dense_later`) gets no late score and none of its chunks is encoded."""
    later = [Chunk.build("later", c.path, "python", c.start_line, c.end_line, c.kind, c.symbol, c.content)
             for c in CHUNKS[1:]]
    chunks = [CHUNKS[0], *later]
    reranker = LateInteractionReranker(LateInteractionConfig(top_n=30, weight=0.9), encoder,
                                       TokenEmbeddingCache(None, 100), building=lambda repo: repo == "later")
    before = encoder.texts_encoded
    out = reranker.rerank("retry a network request with exponential backoff", _hits(chunks),
                          {c.chunk_id: c for c in chunks})
    assert encoder.texts_encoded - before == 2  # the query and the one chunk of the complete repository
    scored = {h.chunk_id for h in out if "late_interaction" in h.scores}
    assert scored == {CHUNKS[0].chunk_id} and out[0].chunk_id == CHUNKS[0].chunk_id
    assert all("token vectors building" in h.explanation for h in out if h.chunk_id not in scored)

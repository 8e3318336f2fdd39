import numpy as np
import pytest

from semantica.config import FaissConfig, LuceneConfig
from semantica.stores.lucene import LuceneDoc, LuceneShardSearcher, LuceneShardWriter
from semantica.stores.vectors import VectorShardPaths, VectorShardSearcher, build_index, write_shard


@pytest.fixture(scope="module")
def lucene_shard(tmp_path_factory):
    directory = tmp_path_factory.mktemp("lucene") / "shard-000"
    writer = LuceneShardWriter(directory, LuceneConfig())
    writer.add([
        LuceneDoc("c1", "def register_hook(self, event, hook):\n    self.hooks[event].append(hook)", "models.py",
                  "Request.register_hook"),
        LuceneDoc("c2", "def send(self, request):\n    return self.adapter.send(request)", "sessions.py", "Session.send"),
        LuceneDoc("c3", "class JSONDecoder:\n    def raw_decode(self, s): ...", "json.py", "JSONDecoder"),
    ])
    writer.close()
    return LuceneShardSearcher(directory, LuceneConfig())


def test_identifier_part_finds_the_chunk(lucene_shard):
    assert lucene_shard.search("register", 5)[0][0] == "c1"
    assert lucene_shard.search("decoder", 5)[0][0] == "c3"
    assert lucene_shard.search("Session.send", 5)[0][0] == "c2"


def test_hostile_queries_are_safe(lucene_shard):
    assert lucene_shard.search("", 5) == []
    assert lucene_shard.search("🚀🚀 \ud800", 5) == []
    many_terms = "register " + " ".join(f"term{i}" for i in range(2000))
    assert len(lucene_shard.sanitise(many_terms).split()) == LuceneConfig().max_query_terms
    assert lucene_shard.search(many_terms, 5)[0][0] == "c1"
    assert lucene_shard.search("register", 0) == []


def test_flat_shard_returns_a_vector_for_its_own_text(tmp_path):
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(50, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    paths = VectorShardPaths.of(tmp_path, "shard-000")
    write_shard(paths, vectors, np.arange(100, 150), FaissConfig())
    searcher = VectorShardSearcher(paths, FaissConfig())
    scores, rows = searcher.search(vectors[[7]], 3)
    assert rows[0][0] == 107 and scores[0][0] == pytest.approx(1.0, abs=1e-5)
    _, rows = searcher.search(vectors[[7]], 500)
    assert rows.shape == (1, 50)


def test_large_shards_use_ivfpq(tmp_path):
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(2000, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    config = FaissConfig(flat_max_vectors=1000, ivf_nlist=16, pq_m=8, nprobe=16)
    index = build_index(vectors, config)
    assert "IVF" in type(index).__name__
    _, positions = index.search(vectors[:20], 5)
    assert np.mean([i in row for i, row in zip(range(20), positions)]) >= 0.8

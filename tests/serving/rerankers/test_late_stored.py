"""Late interaction from stored token vectors: a real index of a small git repo (MiniLM, FAISS, Lucene)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from pipelines.indexer import Indexer
from semantica.api import SearchRequest
from semantica.config import ConfigError, load_config
from semantica.layout import IndexLayout
from semantica.runtime.encoder import encoder_identity, parse_model_id
from semantica.snapshot import SnapshotSet
from serving.pipeline import SearchPipeline
from tests.conftest import make_config
from tests.dated_git import one_commit_repo

FILES = {
    "net/retry.py": 'def retry_with_backoff(fn, attempts=5):\n    """Retry a failing network call with exponential backoff."""\n'
                    "    for i in range(attempts):\n        try:\n            return fn()\n"
                    "        except ConnectionError:\n            time.sleep(2 ** i)\n",
    "img/resize.py": 'def resize_image(img, width, height):\n    """Scale a picture to the given size."""\n'
                     "    return img.resize((width, height))\n",
    "db/schema.py": 'def create_tables(conn):\n    """Create the SQL tables for users and orders."""\n'
                    "    conn.execute('CREATE TABLE users (id INTEGER PRIMARY KEY)')\n",
    "README.md": "# Toolbox\n\nRetries, image resizing and database schema helpers.\n",
}
QUERY = "retry a network request with exponential backoff"


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("stored")
    repo = one_commit_repo(tmp / "repo", FILES)
    config = make_config(tmp, "token_vectors.quantization=int8", "token_vectors.dim=64", private_cache=True)
    first = Indexer(config, progress=False).index(str(repo), "t/toolbox")
    second = Indexer(config, progress=False).index(str(repo), "t/toolbox")
    return config, repo, first, second


def test_manifest_records_token_vectors(indexed) -> None:
    config, _, first, _ = indexed
    paths = IndexLayout(config.paths.index_root).current("t/toolbox")
    manifest = json.loads(paths.manifest.read_text())
    info = manifest["token_vectors"]
    assert info["dim"] == 64 and info["quantization"] == "int8" and info["chunks"] == first.chunks
    model_id = encoder_identity(config.encoder)[0]  # the runtime is part of the identity (and recorded)
    assert info["model_id"] == model_id and info["max_length"] == config.late_interaction.doc_max_length
    assert manifest["model_id"] == model_id and manifest["runtime"] == config.encoder.runtime
    identity = parse_model_id(model_id)
    assert identity.runtime_name == manifest["runtime"] and identity.export_sha == manifest["export_sha"]
    assert model_id.endswith("." + manifest["export_sha"]) and len(manifest["export_sha"]) == 12
    assert info["tokens"] > first.chunks and info["bytes"] > 0
    assert "tokens/projection.npy" in manifest["checksums"] and "tokens/rows.npy" in manifest["checksums"]
    assert info["parts"]  # per partition (pipelines.shards), so unchanged partitions are hard-linked
    for part in info["parts"]:
        for name in ("codes.npy", "scales.npy", "offsets.npy"):
            assert f"tokens/{part}/{name}" in manifest["checksums"]
    codes = [np.load(paths.root / "tokens" / part / "codes.npy", mmap_mode="r") for part in info["parts"]]
    assert all(c.dtype == np.int8 and c.shape[1] == 64 for c in codes)
    assert sum(len(c) for c in codes) == info["tokens"]


def test_unchanged_chunks_reuse_cached_token_vectors(indexed) -> None:
    _, _, first, second = indexed
    assert first.chunks_token_encoded == first.chunks  # a fresh cache: every chunk encoded once
    assert second.chunks_token_encoded == 0 and second.chunks_embedded == 0
    assert "tokens" in second.seconds


def test_query_scores_from_stored_vectors_close_to_encoded(indexed) -> None:
    config, _, _, _ = indexed
    pipeline = SearchPipeline(config)
    response = pipeline.search(SearchRequest(QUERY, repos=["t/toolbox"], k=4, explain=True))
    assert response.hits[0].path == "net/retry.py"
    assert all("(stored)" in h.explanation for h in response.hits if h.late_score is not None)
    assert not response.warnings and not response.degraded
    # the uncompressed on-the-fly MaxSim, from the same candidates: compressed scores stay close
    stored = {h.chunk_id: h.late_score for h in response.hits}
    chunks = pipeline.snapshots.get("t/toolbox").chunk_by_id
    late = pipeline.stages.reranker("late_interaction").model
    encoded = late._late_scores(QUERY, [chunks[c] for c in stored])
    late.stored = None
    exact, from_store = late._late_scores(QUERY, [chunks[c] for c in stored])
    assert not from_store and set(encoded[1]) == set(stored)
    for chunk_id, score in stored.items():
        assert score == pytest.approx(exact[chunk_id], abs=0.08)
    assert max(stored, key=stored.get) == max(exact, key=exact.get)


def test_snapshot_without_token_vectors_falls_back_with_a_warning(indexed, tmp_path) -> None:
    config, repo, _, _ = indexed
    old = make_config(tmp_path, "token_vectors.enabled=false", private_cache=True)
    Indexer(old, progress=False).index(str(repo), "t/toolbox")
    assert SnapshotSet(old).get("t/toolbox").token_vectors is None
    response = SearchPipeline(old).search(SearchRequest(QUERY, repos=["t/toolbox"], k=4, explain=True))
    assert response.hits[0].path == "net/retry.py" and not response.degraded
    assert any("stores no token vectors" in w for w in response.warnings)
    assert all("(encoded)" in h.explanation for h in response.hits if h.late_score is not None)


def test_late_interaction_runs_for_every_intent_and_the_intent_list_is_gone(indexed) -> None:
    """Limiting the stage to some intents lost its golden gain and left the product (issue 45)."""
    config, _, _, _ = indexed
    for query in (QUERY, "who calls create_tables", "resize an image"):  # different dominant intents
        assert "late_interaction" in SearchPipeline(config).search(SearchRequest(query, repos=["t/toolbox"])).timings_ms
    off = dataclasses.replace(config, late_interaction=dataclasses.replace(config.late_interaction, enabled=False))
    forced = SearchPipeline(off).search(SearchRequest(QUERY, repos=["t/toolbox"], late_interaction=True))
    assert "late_interaction" in forced.timings_ms  # an explicit request wins over the switch
    with pytest.raises(ConfigError, match=r"late_interaction: unknown key\(s\) \['intents'\]"):
        load_config(None, ["late_interaction.intents=[code]"])


@pytest.mark.parametrize("query", ["retry_with_backoff", " net.retry.retry_with_backoff "])
def test_one_identifier_query_skips_late_interaction(indexed, query: str) -> None:
    config, _, _, _ = indexed
    skipping = SearchPipeline(config).search(SearchRequest(query, repos=["t/toolbox"]))
    assert config.late_interaction.skip_identifier_queries and "late_interaction" not in skipping.timings_ms
    assert skipping.hits[0].path == "net/retry.py"
    off = dataclasses.replace(config, late_interaction=dataclasses.replace(config.late_interaction,
                                                                            skip_identifier_queries=False))
    running = SearchPipeline(off).search(SearchRequest(query, repos=["t/toolbox"]))
    assert "late_interaction" in running.timings_ms and running.hits[0].path == "net/retry.py"
    forced = SearchPipeline(config).search(SearchRequest(query, repos=["t/toolbox"], late_interaction=True))
    assert "late_interaction" in forced.timings_ms  # an explicit request wins over the switch


def test_a_sentence_still_runs_late_interaction(indexed) -> None:
    config, _, _, _ = indexed
    for query in (QUERY, "retry_with_backoff(fn)", "net/retry.py"):
        assert "late_interaction" in SearchPipeline(config).search(SearchRequest(query, repos=["t/toolbox"])).timings_ms


def test_default_product_quantised_vectors_score_close_to_encoded(tmp_path) -> None:
    repo = one_commit_repo(tmp_path / "repo", FILES)
    config = make_config(tmp_path, private_cache=True)  # the default codec: pq, pq_m bytes per token
    Indexer(config, progress=False).index(str(repo), "t/toolbox")
    pipeline = SearchPipeline(config)
    info = pipeline.snapshots.get("t/toolbox").manifest.token_vectors
    assert info["quantization"] == "pq" and info["code_width"] == config.token_vectors.pq_m
    assert info["projection_sha"].startswith("pq-")
    response = pipeline.search(SearchRequest(QUERY, repos=["t/toolbox"], k=4, explain=True))
    assert response.hits[0].path == "net/retry.py" and not response.warnings
    stored = {h.chunk_id: h.late_score for h in response.hits}
    chunks = pipeline.snapshots.get("t/toolbox").chunk_by_id
    late = pipeline.stages.reranker("late_interaction").model
    late.stored = None
    exact, _ = late._late_scores(QUERY, [chunks[c] for c in stored])
    for chunk_id, score in stored.items():
        assert score == pytest.approx(exact[chunk_id], abs=0.05)

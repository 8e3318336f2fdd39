"""The Ray Data runner on real git repositories (local Ray, fractional CPUs), against the local runner.

The Ray driver runs in its own process (semantica.runtime.ray_runtime): this pytest process has already run
the JVM (Lucene) in earlier tests, and starting Ray here would crash it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from semantica.layout import IndexLayout
from tests.conftest import make_config

pytestmark = [pytest.mark.ray, pytest.mark.timeout(600)]
STAGE_LINE = re.compile(r"^  (\w+): (\d+)/(\d+) (\w+) in [\d.]+s \([\d.]+ \w+/s\)$")


def _git_repo(root: Path, files: dict[str, bytes]) -> Path:
    root.mkdir(parents=True)
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    env = ["-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), *env, "commit", "-qm", "init"], check=True)
    return root


ALPHA = {
    "calc.py": b'def add(a, b):\n    """Add two numbers."""\n    return a + b\n\n\n'
               b'def total(items):\n    return sum(add(0, i) for i in items)\n\n\n'
               b'class Ledger:\n    def record(self, amount):\n        return total([amount])\n',
    "notes.md": b"# Ledger\n\nThe ledger records amounts.\n\n## Totals\n\nTotals sum amounts.\n",
    "bad.py": b"def broken():\n    return '\xff\xfe\xc3\x28 not utf-8'\n",
    "blob.txt": b"binary\x00\x01\x02 data",
}
BETA = {
    "greet.py": b'class Greeter:\n    def hello(self, name):\n        return f"hello {name}"\n\n\n'
                b'def main():\n    return Greeter().hello("world")\n',
    "skip.md": b"# excluded\n",
}


class RecordingCypher:
    """The Memgraph client boundary: records every query, answers nothing (no server here)."""

    def __init__(self, calls: list[tuple[str, dict]]) -> None:
        self.calls = calls

    def execute(self, query: str, params: dict | None = None) -> list[tuple]:
        self.calls.append((query, dict(params or {})))
        return []

    def close(self) -> None:
        pass


def _loaded(calls: list[tuple[str, dict]], repo: str) -> tuple[int, int]:
    """(nodes, edges) merged into the graph store for `repo`."""
    rows = [(q, len(p.get("rows", []))) for q, p in calls if p.get("repo") == repo and "rows" in p]
    return (sum(n for q, n in rows if "MERGE (n:" in q), sum(n for q, n in rows if "MERGE (n:" not in q))


def _tables(layout: IndexLayout, repo: str) -> dict[str, list]:
    paths = layout.current(repo)
    return {name: sorted(map(str, pq.read_table(getattr(paths, name)).to_pylist()))
            for name in ("chunks", "symbols", "edges")}


def test_index_batch_publishes_each_repo_and_reports_failures(tmp_path, monkeypatch, capsys):
    from pipelines.indexer import Indexer
    from pipelines.manifest import load_manifest
    from pipelines.ray_job import RayRunner

    alpha = _git_repo(tmp_path / "alpha", ALPHA)
    beta = _git_repo(tmp_path / "beta", BETA)
    manifest = tmp_path / "repos.yaml"
    manifest.write_text(
        f"- {{name: alpha, path: {alpha}}}\n"
        f"- {{name: beta, path: {beta}, branch: HEAD, exclude: ['*.md']}}\n"
        f"- {{name: ghost, path: {tmp_path / 'does-not-exist'}}}\n"
        f"- {{name: far/away, url: 'file://{tmp_path / 'no-such-remote.git'}'}}\n"
    )
    # tiny shards, and the Memgraph graph store recorded at its client boundary
    settings = ("ray.num_cpus=2", "ray.actor_num_cpus=0.25", "ray.embed_actors=1", "ray.job_timeout_s=400",
                "faiss.shard_max_vectors=2", "lucene.shard_max_docs=2", "graph.store=memgraph",
                "graph.memgraph_uri=bolt://127.0.0.1:7687")
    calls: list[tuple[str, dict]] = []
    monkeypatch.setattr("semantica.stores.memgraph.connect", lambda uri: RecordingCypher(calls))
    config = make_config(tmp_path, *settings)
    summary = Indexer(config, RayRunner(config)).run(load_manifest(manifest))
    by_repo = {r.repo: r for r in summary.repos}
    stages = {m.group(1): m.groups() for m in map(STAGE_LINE.match, capsys.readouterr().err.splitlines()) if m}
    assert stages["ray"][1] == stages["ray"][2] and stages["ray"][3] == "files"  # without a terminal: a line a stage
    assert stages["embed"][3] == "chunks"
    assert int(stages["embed"][1]) == by_repo["alpha"].chunks + by_repo["beta"].chunks  # chunks while Ray Data ran

    assert summary.ray_used and not summary.ok
    assert by_repo["alpha"].status == "ok" and by_repo["beta"].status == "ok"
    assert by_repo["ghost"].status == "failed" and "does not exist" in by_repo["ghost"].reason
    assert by_repo["far/away"].status == "failed" and "clone" in by_repo["far/away"].reason

    layout = IndexLayout(config.paths.index_root)
    assert layout.repos() == ["alpha", "beta"]
    alpha_paths = layout.current("alpha")
    errors = pq.read_table(alpha_paths.errors).to_pylist()
    reasons = {e["path"]: e["reason"] for e in errors}
    assert "UTF-8" in reasons["bad.py"] and reasons["blob.txt"] == "binary"
    manifest_alpha = alpha_paths.read_manifest()
    assert manifest_alpha.counts["chunks"] == by_repo["alpha"].chunks > 2
    assert sum(1 for s in manifest_alpha.shards if s.kind == "faiss") >= 2
    assert sum(1 for s in manifest_alpha.shards if s.kind == "lucene") >= 2
    beta_chunks = pq.read_table(layout.current("beta").chunks).column("path").to_pylist()
    assert set(beta_chunks) == {"greet.py"}  # skip.md excluded by the manifest glob

    # the local runner publishes the same chunks, symbols and edges, and loads the same graph store
    ray_loaded = _loaded(calls, "alpha")
    assert ray_loaded[0] > 0 and ray_loaded[1] > 0
    calls.clear()
    local_config = make_config(tmp_path / "local", *settings)
    local = Indexer(local_config, progress=False).index(str(alpha), "alpha")
    assert local.chunks == by_repo["alpha"].chunks and local.edges == by_repo["alpha"].edges
    assert _tables(IndexLayout(local_config.paths.index_root), "alpha") == _tables(layout, "alpha")
    assert _loaded(calls, "alpha") == ray_loaded

    # every shard is searched: the hits of a query come from chunks spread over the shards
    from semantica.api import SearchRequest
    from serving.pipeline import SearchPipeline

    pipeline = SearchPipeline(make_config(tmp_path, *settings[:6]))  # the embedded graph store answers
    response = pipeline.search(SearchRequest(query="Ledger record total", repos=["alpha"], k=10,
                                             late_interaction=False))
    assert not response.degraded
    rows = {h.chunk_id for h in response.hits}
    assert len(rows) >= 3 and any(h.symbol.endswith("record") for h in response.hits)

    # re-run on unchanged repositories: everything comes from the caches, Ray is not started
    again = Indexer(config, RayRunner(config)).run(load_manifest(manifest))
    rerun = {r.repo: r for r in again.repos}
    assert not again.ray_used
    assert rerun["alpha"].status == "ok" and rerun["alpha"].chunks_embedded == 0
    assert rerun["alpha"].chunks_reused == by_repo["alpha"].chunks
    assert rerun["alpha"].errors == by_repo["alpha"].errors
    assert again.seconds < summary.seconds
    print(f"\nray job: first run {summary.seconds:.1f}s, re-run {again.seconds:.1f}s")


def _token_vectors(config, repo: str) -> dict[str, np.ndarray]:
    """chunk id -> its stored token vectors, decoded (rows of the snapshot's token files)."""
    from semantica.snapshot import Snapshot

    snapshot = Snapshot.open(IndexLayout(config.paths.index_root).current(repo), config)
    stored = snapshot.token_vectors
    assert stored is not None, "the snapshot has no token vectors"
    return {chunk_id: stored.codec.decode(*stored._span(row)) for chunk_id, row in snapshot.chunk_row.items()}


def test_index_batch_workers_make_the_token_vectors(tmp_path, monkeypatch):
    """`index-batch` publishes the token vectors `index` publishes, made on the Ray workers: the driver's
    process (this one) never encodes a token vector. Private caches, so nothing is reused from earlier runs;
    int8 at full width needs no fitted codec, so the two runs' codes are comparable."""
    from pipelines.indexer import Indexer
    from pipelines.manifest import load_manifest
    from pipelines.ray_job import RayRunner
    from semantica.runtime.encoder import Encoder

    alpha = _git_repo(tmp_path / "alpha", ALPHA)
    manifest = tmp_path / "repos.yaml"
    manifest.write_text(f"- {{name: alpha, path: {alpha}}}\n")
    settings = ("ray.num_cpus=2", "ray.actor_num_cpus=0.25", "ray.embed_actors=0", "ray.job_timeout_s=400",
                "token_vectors.quantization=int8", "token_vectors.dim=384")  # 0: the autoscaled pool (one, no GPU)
    local_config = make_config(tmp_path / "local", *settings, private_cache=True)
    local = Indexer(local_config, progress=False).index(str(alpha), "alpha")
    assert local.chunks_token_encoded == local.chunks > 2

    pooled_only = Encoder.encode_with_tokens

    def head_node_encodes(*_args, **_kwargs):
        raise AssertionError("the driver encoded token vectors: the Ray workers should have")

    def head_node_pools(self, texts, max_length=None, keep_tokens=True):  # noqa: ANN001, ANN202
        """The driver may pool (the dense channel's function vectors are written with the snapshot), never keep
        token vectors."""
        if keep_tokens:
            head_node_encodes()
        return pooled_only(self, texts, max_length, keep_tokens=False)

    monkeypatch.setattr(Encoder, "encode_tokens", head_node_encodes)
    monkeypatch.setattr(Encoder, "encode_with_tokens", head_node_pools)
    ray_config = make_config(tmp_path / "ray", *settings, private_cache=True)
    summary = Indexer(ray_config, RayRunner(ray_config)).run(load_manifest(manifest))
    result = summary.repos[0]
    assert summary.ray_used and result.status == "ok", result.reason
    assert result.chunks == local.chunks and result.chunks_token_encoded == result.chunks

    ray_tokens, local_tokens = _token_vectors(ray_config, "alpha"), _token_vectors(local_config, "alpha")
    assert ray_tokens.keys() == local_tokens.keys()
    for chunk_id, vectors in local_tokens.items():
        assert ray_tokens[chunk_id].shape == vectors.shape and len(vectors), chunk_id
        assert np.allclose(ray_tokens[chunk_id], vectors, atol=0.02), chunk_id


# real code of this repository (both Python and a docs page): a small real tree with a few dozen functions
REAL_FILES = ("pipelines/overlap.py", "pipelines/embed.py", "semantica/stores/index_kinds/sharding.py", "docs/plan.md")


def test_index_batch_workers_make_the_function_vectors_an_in_process_build_makes(tmp_path, monkeypatch):
    """The dense function channel is a model pass of the runner: `index-batch` publishes the function vectors
    `index` publishes (same keys, same source shas, the same vectors up to float16 rounding), encoded on the Ray
    embedding actor; the driver's process (this one) encodes nothing. Private caches: nothing is reused."""
    from pipelines.indexer import Indexer
    from pipelines.manifest import load_manifest
    from pipelines.ray_job import RayRunner
    from semantica.runtime.encoder import Encoder
    from semantica.snapshot import Snapshot
    from semantica.stores.index_kinds.function_vectors import KIND
    from tests.conftest import REPO_ROOT

    repo = _git_repo(tmp_path / "real", {path: (REPO_ROOT / path).read_bytes() for path in REAL_FILES})
    manifest = tmp_path / "repos.yaml"
    manifest.write_text(f"- {{name: real, path: {repo}}}\n")
    settings = ("ray.num_cpus=2", "ray.actor_num_cpus=0.25", "ray.embed_actors=1", "ray.job_timeout_s=400",
                "token_vectors.enabled=false", "shards.partition_chunks=8")  # several function-vector shards
    local_config = make_config(tmp_path / "local", *settings, private_cache=True)
    Indexer(local_config, progress=False).index(str(repo), "real")

    def head_node_encodes(*_args, **_kwargs):
        raise AssertionError("the driver encoded: the Ray workers should have")

    monkeypatch.setattr(Encoder, "encode", head_node_encodes)
    monkeypatch.setattr(Encoder, "encode_with_tokens", head_node_encodes)
    ray_config = make_config(tmp_path / "ray", *settings, private_cache=True)
    summary = Indexer(ray_config, RayRunner(ray_config)).run(load_manifest(manifest))
    assert summary.ray_used and summary.repos[0].status == "ok", summary.repos[0].reason

    local_snapshot, ray_snapshot = (Snapshot.open(IndexLayout(c.paths.index_root).current("real"), c)
                                    for c in (local_config, ray_config))
    local, remote = local_snapshot.index(KIND), ray_snapshot.index(KIND)
    counts = ray_snapshot.manifest.counts
    assert counts["function_vectors"] == local_snapshot.manifest.counts["function_vectors"] > 20
    assert counts["function_vectors_encoded"] == counts["function_vectors"]  # by the workers, none reused
    assert len(ray_snapshot.shard_paths(KIND)) > 1  # sharded by the files' partitions
    assert remote.model_id == local.model_id and remote.rows.keys() == local.rows.keys()
    assert "pipelines/embed.py::EmbeddingCache.get_many" in remote.rows
    for key, row in local.rows.items():
        assert remote.shas[remote.rows[key]] == local.shas[row], key
        assert np.allclose(remote.vector(key), local.vector(key), atol=2e-3), key

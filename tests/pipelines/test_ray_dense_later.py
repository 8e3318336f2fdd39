"""`index.dense_later` on the Ray runner: the files are parsed on Ray, a first snapshot (chunk, token and function
vectors pending) is published before any model pass, and the embed actor pool's successor holds the vectors an
in-process build publishes. Local Ray, fractional CPUs; the Ray drivers run in their own processes."""

from __future__ import annotations

import numpy as np
import pytest

from pipelines.indexer import DENSE_KINDS, FIRST_ANSWER_STAGE, Indexer
from pipelines.manifest import load_manifest
from pipelines.parse import FileParser
from pipelines.ray_job import RayRunner
from semantica.layout import IndexLayout
from semantica.ondisk.layout_errors import UnknownRepoError
from semantica.snapshot import Snapshot
from semantica.stores.index_kinds.function_vectors import KIND as FUNCTION_VECTORS
from tests.conftest import REPO_ROOT, make_config
from tests.pipelines.test_ray_job import _git_repo, _token_vectors

pytestmark = [pytest.mark.ray, pytest.mark.timeout(600)]
REPO = "later/real"
REAL_FILES = ("pipelines/overlap.py", "pipelines/embed.py")
SETTINGS = ("ray.num_cpus=2", "ray.actor_num_cpus=0.25", "ray.embed_actors=1", "ray.job_timeout_s=400",
            "token_vectors.quantization=int8", "token_vectors.dim=384")  # int8 at full width: no fitted codec


class FirstSnapshotWitness(RayRunner):
    """The Ray runner, recording what is current when the model passes start."""

    seen: list[Snapshot] = []
    parsed_before: bool = False

    def run(self, tasks, tokens=None):  # noqa: ANN001, ANN201
        try:
            self.seen = [Snapshot.open(IndexLayout(self.config.paths.index_root).current(REPO), self.config)]
        except UnknownRepoError:
            self.seen = []
        self.parsed_before = bool(tasks) and all(t.parsed is not None for t in tasks)
        return super().run(tasks, tokens)


def _chunk_vectors(snapshot: Snapshot) -> dict[str, np.ndarray]:
    """chunk id -> its stored vector (flat shards, reconstructed)."""
    by_row: dict[int, np.ndarray] = {}
    for shard in snapshot.vector_shards:
        by_row.update(zip(shard.rows.tolist(), shard.index.reconstruct_n(0, shard.index.ntotal)))
    return {chunk_id: by_row[row] for chunk_id, row in snapshot.chunk_row.items()}


def test_a_dense_later_ray_build_answers_first_then_publishes_the_in_process_vectors(tmp_path, monkeypatch):
    repo = _git_repo(tmp_path / "real", {path: (REPO_ROOT / path).read_bytes() for path in REAL_FILES})
    manifest = tmp_path / "repos.yaml"
    manifest.write_text(f"- {{name: {REPO}, path: {repo}}}\n")
    local_config = make_config(tmp_path / "local", *SETTINGS, private_cache=True)
    Indexer(local_config, progress=False).index(str(repo), REPO)

    def driver_parses(*_args, **_kwargs):
        raise AssertionError("the driver parsed a file: the Ray workers should have")

    monkeypatch.setattr(FileParser, "parse", driver_parses)
    ray_config = make_config(tmp_path / "ray", *SETTINGS, "index.dense_later=true", private_cache=True)
    runner = FirstSnapshotWitness(ray_config)
    summary = Indexer(ray_config, runner).run(load_manifest(manifest))
    result = summary.repos[0]
    assert summary.ray_used and result.status == "ok", result.reason

    (first,) = runner.seen
    assert runner.parsed_before  # the model passes got the first phase's parses
    assert first.manifest.pending == list(DENSE_KINDS)
    assert not first.shard_paths("faiss") and not first.manifest.token_vectors
    assert first.manifest.counts["symbols"] > 10

    layout = IndexLayout(ray_config.paths.index_root)
    final = Snapshot.open(layout.current(REPO), ray_config)
    local = Snapshot.open(IndexLayout(local_config.paths.index_root).current(REPO), local_config)
    assert final.snapshot_id == result.snapshot_id != first.snapshot_id
    assert final.manifest.commit == first.manifest.commit and final.manifest.pending == []
    assert result.files_parsed == len(REAL_FILES) and 0 < result.seconds[FIRST_ANSWER_STAGE] < summary.seconds

    ray_vectors, local_vectors = _chunk_vectors(final), _chunk_vectors(local)
    assert ray_vectors.keys() == local_vectors.keys() and len(local_vectors) > 10
    for chunk_id, vector in local_vectors.items():
        assert np.allclose(ray_vectors[chunk_id], vector, atol=1e-5), chunk_id
    ray_tokens, local_tokens = _token_vectors(ray_config, REPO), _token_vectors(local_config, REPO)
    assert ray_tokens.keys() == local_tokens.keys()
    for chunk_id, vectors in local_tokens.items():
        assert np.allclose(ray_tokens[chunk_id], vectors, atol=0.02), chunk_id
    remote, here = final.index(FUNCTION_VECTORS), local.index(FUNCTION_VECTORS)
    assert remote.rows.keys() == here.rows.keys() and len(here.rows) > 10
    for key in here.rows:
        assert np.allclose(remote.vector(key), here.vector(key), atol=2e-3), key

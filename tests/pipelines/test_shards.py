"""Incremental shard writes on a small real git repo (tree-sitter, MiniLM, FAISS, Lucene): a one-file
change rebuilds one partition and hard-links every other shard, and the snapshot answers exactly like a
full rebuild."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from pipelines.indexer import Indexer
from pipelines.shards import PARTITIONS_STAT, partition_count, partition_of, partition_rows
from semantica.config import ShardsConfig
from semantica.layout import IndexLayout
from semantica.ondisk.snapshot_paths import SnapshotPaths
from semantica.runtime.encoder import shared_encoder
from semantica.snapshot import Snapshot
from semantica.stores.index_kinds import exact as exact_kind
from tests.conftest import make_config

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]
TOPICS = ["retry", "resize", "schema", "parser", "cache", "token", "socket", "render", "compress", "schedule"]
FILES = {
    f"pkg/{topic}.py": f'def {topic}_main(value, attempts=3):\n    """The {topic} entry point: {topic} the value."""\n'
                       f"    return [{topic}_step(value, i) for i in range(attempts)]\n\n\n"
                       f"def {topic}_step(value, i):\n    return (value, i, {len(topic)})\n"
    for topic in TOPICS
}
FILES["pkg/retry.py"] = ("from pkg.cache import fresh_cache_helper\n\n\n" + FILES["pkg/retry.py"]  # defined later
                         + "\n\ndef retry_cached(key):\n    return fresh_cache_helper(key)\n")
CHANGED = "pkg/cache.py"
QUERIES = ["retry the value", "cache entry point", "fresh_cache_helper", "socket step", "compress schedule render"]
SMALL_PARTITIONS = ["shards.partition_chunks=2", "shards.max_partitions=4"]  # 4 partitions, for every build


def git_repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    subprocess.run([*GIT, "init", "-q", "-b", "main", str(root)], check=True)
    subprocess.run([*GIT, "-C", str(root), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(root), "commit", "-qm", "init"], check=True)
    return root


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shards")
    repo = git_repo(tmp / "repo", FILES)
    config = make_config(tmp / "inc", *SMALL_PARTITIONS)
    indexer = Indexer(config, progress=False)
    layout = IndexLayout(config.paths.index_root)
    first = indexer.index(str(repo), "t/inc")
    before = layout.current("t/inc")
    changed = repo / CHANGED
    changed.write_text(changed.read_text() + "\n\ndef fresh_cache_helper(key):\n    return key.upper()\n")
    second = indexer.index(str(repo), "t/inc")
    after = layout.current("t/inc")
    full_config = make_config(tmp / "full", *SMALL_PARTITIONS, "shards.reuse=false")
    full = Indexer(full_config, progress=False).index(str(repo), "t/inc")
    return {"config": config, "first": first, "second": second, "before": before, "after": after, "full": full,
            "full_config": full_config, "indexer": indexer, "repo": repo}


def shard_files(root: Path, relative: str) -> list[Path]:
    path = root / relative
    return [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())


def test_one_file_change_rebuilds_one_partition_and_links_the_rest(builds) -> None:
    first, second = builds["first"], builds["second"]
    before, after = Snapshot.open(builds["before"], builds["config"]), Snapshot.open(builds["after"], builds["config"])
    count = after.manifest.stats[PARTITIONS_STAT]
    assert count == before.manifest.stats[PARTITIONS_STAT] > 3
    assert first.shards_linked == 0 and first.shards_written > 0
    assert second.files_parsed == 1 and second.shards_linked > 0
    # one shard per kind for the changed partition (function vectors included: they are sharded like chunk vectors)
    kinds = {s.kind for s in after.manifest.shards} | {"tokens"}
    localizer = builds["config"].localizer
    if localizer.enabled:  # ... and the localizer's whole-snapshot fields: a Python file changed
        kinds |= {"localizer"}
    assert second.shards_written == len(kinds)
    assert second.shards_linked + second.shards_written == first.shards_written
    old = {s.path for s in before.manifest.shards}
    # the exact kind partitions by the same path hash into as many partitions as its text needs (exact.shard_bytes)
    stored = [data for shard in after.index(exact_kind.KIND) for _, data in shard.texts()]
    exact_count = exact_kind.partition_count(sum(len(text) for text in stored), builds["config"].exact.shard_bytes,
                                             builds["config"].shards.max_partitions)
    for shard in after.manifest.shards:
        number = int(Path(shard.path).name[1:4])
        changed_partition = partition_of(CHANGED, exact_count if shard.kind == exact_kind.KIND else count)
        if shard.path in old:  # unchanged content: the very same files (inodes), not copies
            assert number != changed_partition
            for new_file, old_file in zip(shard_files(after.paths.root, shard.path),
                                          shard_files(before.paths.root, shard.path), strict=True):
                assert os.stat(new_file).st_ino == os.stat(old_file).st_ino
        else:
            assert number == changed_partition, shard.path


def test_edges_from_unchanged_files_into_the_changed_file_are_resolved_again(builds) -> None:
    config = builds["config"]
    before, after = Snapshot.open(builds["before"], config), Snapshot.open(builds["after"], config)
    call = ("pkg/retry.py::retry_cached", "pkg/cache.py::fresh_cache_helper")
    assert call not in {(e.src, e.dst) for e in before.edges if e.resolved}  # not defined anywhere yet
    assert call in {(e.src, e.dst) for e in after.edges if e.resolved}  # retry.py was not re-parsed, only resolved


def test_incremental_snapshot_equals_a_full_rebuild(builds) -> None:
    config = builds["config"]
    inc = Snapshot.open(builds["after"], config)
    full = Snapshot.open(IndexLayout(builds["full_config"].paths.index_root).current("t/inc"), builds["full_config"])
    assert builds["full"].shards_linked == 0
    assert [c.chunk_id for c in inc.chunks] == [c.chunk_id for c in full.chunks]
    assert sorted(map(str, (e.to_row() for e in inc.edges))) == sorted(map(str, (e.to_row() for e in full.edges)))
    same_names = {s.path for s in inc.manifest.shards} & {s.path for s in full.manifest.shards}
    same_names |= {f"tokens/{p}" for p in set(inc.manifest.token_vectors["parts"]) & set(full.manifest.token_vectors["parts"])}
    compared = 0
    for name, digest in inc.manifest.checksums.items():  # same name, same content (Lucene's bytes carry segment ids)
        if any(name.startswith(shard.removesuffix(".faiss")) for shard in same_names if not shard.startswith("lucene")) \
                and "ids.npy" not in name:
            assert full.manifest.checksums[name] == digest, name
            compared += 1
    assert compared > 0
    encoder = shared_encoder(config.encoder)
    for query in QUERIES:
        assert inc.lucene_shards[0].search(query, 8) == full.lucene_shards[0].search(query, 8)
        vector = encoder.encode([query])
        assert _vector_top(inc, vector) == _vector_top(full, vector)
    stored, rebuilt = inc.token_vectors, full.token_vectors  # late interaction reads the linked token parts
    assert stored is not None and rebuilt is not None and len(stored.info.parts) > 3
    tokens = np.random.default_rng(0).standard_normal((4, stored.info.source_dim)).astype(np.float32)
    tokens /= np.linalg.norm(tokens, axis=1, keepdims=True)
    rows = list(range(len(inc.chunks)))
    assert np.array_equal(stored.maxsim(tokens, rows), rebuilt.maxsim(tokens, rows))
    assert np.count_nonzero(stored.maxsim(tokens, rows)) == len(rows)
    helper = next(c for c in inc.chunks if c.symbol == "fresh_cache_helper")
    assert inc.lucene_shards[0].search("fresh_cache_helper", 1)[0][0] == helper.chunk_id


def _vector_top(snapshot: Snapshot, vector: np.ndarray, k: int = 8) -> list[tuple[str, float]]:
    hits = [(float(score), snapshot.chunks[row].chunk_id) for shard in snapshot.vector_shards
            for score, row in zip(*(a[0] for a in shard.search(vector, k))) if row >= 0]
    return [(cid, round(score, 5)) for score, cid in sorted(hits, reverse=True)[:k]]


def test_linked_shards_outlive_the_pruned_snapshot(builds) -> None:
    config, indexer, repo = builds["config"], builds["indexer"], builds["repo"]
    (repo / "pkg" / "render.py").write_text((repo / "pkg" / "render.py").read_text() + "\nRENDER_LIMIT = 7\n")
    third = indexer.index(str(repo), "t/inc")  # keep_snapshots=2: the first snapshot is removed now
    layout = IndexLayout(config.paths.index_root)
    assert not builds["before"].root.exists() and third.shards_linked > 0
    builds["after"].verify()  # every byte of the linked files still matches its checksum
    layout.current("t/inc").verify()


def test_partition_count_is_kept_while_sizes_stay_near_the_target() -> None:
    config = ShardsConfig(partition_chunks=100, max_partitions=8)
    assert partition_count(0, config) == 1 and partition_count(250, config) == 3
    assert partition_count(260, config, previous=3) == 3 and partition_count(590, config, previous=3) == 3
    assert partition_count(700, config, previous=3) == 7 and partition_count(10_000, config) == 8
    rows = partition_rows(["a.py", "b.py", "a.py", "c.py"], 4)
    assert sorted(int(r) for part in rows for r in part) == [0, 1, 2, 3]
    assert any({0, 2} <= set(part.tolist()) for part in rows)  # a file's chunks stay together


def test_a_broken_previous_snapshot_means_every_shard_is_written(tmp_path) -> None:
    from pipelines.shards import PreviousShards

    paths = SnapshotPaths(tmp_path / "gone")
    assert PreviousShards.of(paths).root is None and PreviousShards.of(None).partitions == 0

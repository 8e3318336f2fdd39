"""Parse ahead of the encoder: the bounded prefetcher, and an overlapped build equal to a sequential one."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from pipelines.indexer import Indexer
from pipelines.overlap import Prefetcher, partitions
from pipelines.token_cache import TOKEN_VECTORS_DIR
from semantica.api import SearchRequest
from semantica.layout import IndexLayout
from semantica.snapshot import Snapshot
from serving.pipeline import SearchPipeline
from tests.conftest import REPO_ROOT, make_config

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]
# three files parsed one at a time ahead of the encoder (index.overlap_files=1): three partitions, so the
# prefetcher runs ahead while the encoder works; a cold build of each costs most of this module's time
SOURCES = ("pipelines/overlap.py", "pipelines/ignore.py", "semantica/ondisk/repo_names.py")
QUERIES = ("prefetch the next partition on a thread", "gitignore patterns", "normalise a repository name")
OVERLAP_FILES = 1
# the default encoder runs in bf16 (OpenVINO): a text's vector moves by up to ~5e-4 with the batch it came in, and the
# overlapped build batches its texts otherwise; another chunk's vector differs by far more
BF16_BATCH_ATOL = 2e-3


def test_partitions_are_consecutive_slices() -> None:
    assert partitions(list(range(7)), 3) == [[0, 1, 2], [3, 4, 5], [6]]
    assert partitions(list(range(7)), 0) == [list(range(7))]
    assert partitions([], 3) == []


def test_prefetcher_keeps_order_and_stays_bounded() -> None:
    produced: list[int] = []

    def produce(n: int) -> int:
        produced.append(n)
        return n * n

    seen = []
    for value in Prefetcher(produce, depth=2).run(list(range(20))):
        time.sleep(0.01)  # a slow consumer: the producer may only run `depth` (+1 in hand) parts ahead
        assert len(produced) - len(seen) <= 4
        seen.append(value)
    assert seen == [n * n for n in range(20)]


def test_prefetcher_raises_producer_errors_and_stops_when_the_consumer_does() -> None:
    def produce(n: int) -> int:
        if n == 3:
            raise ValueError("bad part 3")
        return n

    with pytest.raises(ValueError, match="bad part 3"):
        list(Prefetcher(produce, depth=1).run(list(range(10))))
    before = threading.active_count()
    for value in Prefetcher(lambda n: n, depth=1).run(list(range(1000))):
        if value == 2:
            break
    assert threading.active_count() == before  # the producer thread was joined


@pytest.fixture()
def real_repo(tmp_path) -> Path:
    repo = tmp_path / "repo"
    for source in SOURCES:
        (repo / source).parent.mkdir(parents=True, exist_ok=True)
        (repo / source).write_text((REPO_ROOT / source).read_text())
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "one"]):
        subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True)
    return repo


def _copy_codec(source, target) -> None:
    """The fitted token codec files (not its cached codes, nor any embedding) of one cache into another."""
    for codec_dir in (Path(source.paths.cache_dir) / TOKEN_VECTORS_DIR).iterdir():
        into = Path(target.paths.cache_dir) / TOKEN_VECTORS_DIR / codec_dir.name
        into.mkdir(parents=True)
        for file in codec_dir.iterdir():
            if file.is_file():
                shutil.copy(file, into / file.name)


def test_overlapped_build_publishes_the_sequential_snapshot(real_repo, tmp_path) -> None:
    """Parsing files ahead of the encoder: same chunks, symbols, vectors and answers."""
    built = {}
    for mode, overlap in (("sequential", 0), ("overlapped", OVERLAP_FILES)):
        config = make_config(tmp_path / mode, f"index.overlap_files={overlap}", private_cache=True)
        if built:  # the token codec is fitted once per cache on the first tokens seen: both builds use the first's
            _copy_codec(make_config(tmp_path / "sequential", private_cache=True), config)
        summary = Indexer(config, progress=False).index(str(real_repo), "overlap/repo", "HEAD")
        assert summary.files == len(SOURCES) and summary.chunks > 0
        snapshot = Snapshot.open(IndexLayout(config.paths.index_root).current("overlap/repo"), config)
        pipeline = SearchPipeline(config)
        answers = [[h.chunk_id for h in pipeline.search(SearchRequest(query=q, repos=["overlap/repo"], k=10)).hits]
                   for q in QUERIES]
        vectors = np.concatenate([s.index.reconstruct_n(0, s.index.ntotal)[np.argsort(s.rows)]
                                  for s in snapshot.vector_shards])
        built[mode] = (snapshot.manifest, [c.chunk_id for c in snapshot.chunks],
                       sorted(s.symbol_id for s in snapshot.symbols), answers, vectors)
    (m1, chunks1, symbols1, answers1, v1), (m2, chunks2, symbols2, answers2, v2) = built.values()
    assert chunks1 == chunks2 and symbols1 == symbols2
    assert m1.counts == m2.counts and [s.kind for s in m1.shards] == [s.kind for s in m2.shards]
    assert answers1 == answers2 and all(answers1)
    assert np.allclose(v1, v2, atol=BF16_BATCH_ATOL)

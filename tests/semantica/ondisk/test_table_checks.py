"""The cheap structural checks on a real built snapshot's index files: every file of a Lucene shard cut short or
gone is named, an SQLite shard cut at a page boundary is named, FAISS files are read as FAISS reads them, and a
file is read again only when its stat changes."""

from __future__ import annotations

import shutil

import pytest

from semantica.layout import IndexLayout
from semantica.ondisk.check_cache import StatCachedChecks
from semantica.ondisk.lucene_files import newest_commit, segment_files
from semantica.ondisk.snapshot_paths import SnapshotPaths
from semantica.ondisk.table_checks import SQLITE_HEADER_BYTES, TableChecks
from tests.serving.ray.test_app import REPO_NAME, make_tiny_index

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A real snapshot, indexed once; each test damages its own copy."""
    config = make_tiny_index(tmp_path_factory.mktemp("table-checks"))
    return IndexLayout(config.paths.index_root).current(REPO_NAME).root


@pytest.fixture
def snapshot(built, tmp_path):
    copy = tmp_path / built.name
    shutil.copytree(built, copy)
    return SnapshotPaths(copy)


def _damaged(snapshot: SnapshotPaths) -> dict[str, str]:
    return TableChecks().damaged(snapshot, snapshot.read_manifest())


def _lucene_shard(snapshot: SnapshotPaths):
    [shard] = [s for s in snapshot.read_manifest().shards if s.kind == "lucene"]
    return shard.path, snapshot.root / shard.path


def test_a_whole_snapshot_has_no_damaged_file(snapshot):
    assert _damaged(snapshot) == {}


def test_each_file_of_a_lucene_segment_cut_short_is_named(snapshot):
    relative, directory = _lucene_shard(snapshot)
    listed = [newest_commit(directory).name, *segment_files(directory / "_0.si")]
    assert len(listed) > 5, listed
    for name in listed:
        path = directory / name
        whole = path.read_bytes()
        path.write_bytes(whole[: len(whole) // 2])
        assert list(_damaged(snapshot)) == [f"{relative}/{name}"], name
        path.write_bytes(whole)
    assert _damaged(snapshot) == {}


def test_a_lucene_file_the_segment_lists_that_is_gone_is_named(snapshot):
    relative, directory = _lucene_shard(snapshot)
    [terms] = [name for name in segment_files(directory / "_0.si") if name.endswith(".tim")]
    (directory / terms).unlink()
    damaged = _damaged(snapshot)
    assert list(damaged) == [f"{relative}/{terms}"], damaged
    assert "FileNotFoundError" in damaged[f"{relative}/{terms}"] and str(directory) not in damaged[f"{relative}/{terms}"]


def test_a_lucene_directory_without_its_commit_point_is_named(snapshot):
    relative, directory = _lucene_shard(snapshot)
    newest_commit(directory).unlink()
    assert list(_damaged(snapshot)) == [relative]


def test_an_sqlite_shard_cut_at_a_page_boundary_is_named(snapshot):
    [shard] = snapshot.root.glob("exact/*.sqlite")
    whole = shard.read_bytes()
    page = int.from_bytes(whole[16:18], "big")
    assert len(whole) >= 2 * page
    shard.write_bytes(whole[: len(whole) - page])  # whole pages, one fewer than the header counts
    relative = shard.relative_to(snapshot.root).as_posix()
    damaged = _damaged(snapshot)
    assert list(damaged) == [relative] and "cut short" in damaged[relative], damaged
    shard.write_bytes(whole[:SQLITE_HEADER_BYTES - 1])
    assert list(_damaged(snapshot)) == [relative]


@pytest.mark.parametrize("pattern", ["vectors/*.faiss", "tokens/pq.faiss"])
def test_a_faiss_file_cut_short_is_named_without_its_path(snapshot, pattern):
    [path] = snapshot.root.glob(pattern)
    whole = path.read_bytes()
    path.write_bytes(whole[:-1])
    damaged = _damaged(snapshot)
    relative = path.relative_to(snapshot.root).as_posix()
    assert list(damaged) == [relative] and str(snapshot.root) not in damaged[relative], damaged


def test_a_file_is_checked_again_only_when_its_stat_changes(snapshot):
    [path] = snapshot.root.glob("exact/*.sqlite")
    seen: list[int] = []

    def size_of(checked):  # the check's verdict: the size it read
        seen.append(len(checked.read_bytes()))
        return seen[-1]

    checks = StatCachedChecks(size_of)
    whole = checks.verdict(path)
    assert checks.verdict(path) == whole and len(seen) == 1
    path.write_bytes(path.read_bytes()[: whole // 2])
    assert checks.verdict(path) == whole // 2 and len(seen) == 2


@pytest.mark.parametrize("garbage", [b"", b"\x3f\xd7", b"\x3f\xd7\x6c\x17" + b"\xff" * 40, b"\x00" * 64])
def test_garbage_in_a_lucene_commit_point_is_named_never_raised(snapshot, garbage):
    relative, directory = _lucene_shard(snapshot)
    commit = newest_commit(directory)
    commit.write_bytes(garbage)
    damaged = _damaged(snapshot)
    assert list(damaged) == [f"{relative}/{commit.name}"], damaged


def test_a_segment_info_with_its_footer_but_a_corrupt_body_is_named(snapshot):
    relative, directory = _lucene_shard(snapshot)
    info = directory / "_0.si"
    whole = info.read_bytes()
    info.write_bytes(whole[:48] + b"\xff" * (len(whole) - 64) + whole[-16:])
    assert list(_damaged(snapshot)) == [f"{relative}/_0.si"]

import json

import pytest

from semantica.layout import CURRENT, IndexLayout
from semantica.ondisk.layout_errors import LayoutError, UnknownRepoError
from semantica.ondisk.snapshot_paths import directory_checksums
from semantica.schema import Manifest


def _finish(paths, repo):
    (paths.root / "chunks.parquet").write_bytes(b"data")
    manifest = Manifest(repo=repo, snapshot_id=paths.root.name, commit="abc", created="now", model_id="m", dim=3,
                        counts={"chunks": 1}, shards=[], checksums=directory_checksums(paths.root))
    paths.write_manifest(manifest)


def test_publish_moves_current_and_prunes(tmp_path):
    layout = IndexLayout(tmp_path)
    ids = []
    for _ in range(3):
        sid, paths = layout.begin("psf/requests", "abc")
        _finish(paths, "psf/requests")
        layout.publish("psf/requests", sid, keep=2)
        ids.append(sid)
    assert layout.current_id("psf/requests") == ids[-1]
    assert layout.repos() == ["psf/requests"]
    remaining = sorted(p.name for p in layout.repo_dir("psf/requests").iterdir() if p.is_dir())
    assert remaining == sorted(ids[1:])


def test_prune_keeps_current_and_newest_when_the_last_publish_is_the_oldest_build(tmp_path):
    """Concurrent builds publish out of order: the last one published (CURRENT) may have the oldest id.
    Retention still keeps exactly `keep` snapshots (it kept keep + 1 before)."""
    layout = IndexLayout(tmp_path)
    builds = [layout.begin("r", "c") for _ in range(3)]
    for _sid, paths in builds:
        _finish(paths, "r")
    oldest, middle, newest = (sid for sid, _ in builds)
    for sid in (middle, newest, oldest):
        layout.publish("r", sid, keep=2)
    assert layout.current_id("r") == oldest
    remaining = sorted(p.name for p in layout.repo_dir("r").iterdir() if p.is_dir())
    assert remaining == sorted([oldest, newest])


def test_corrupted_build_is_not_published(tmp_path):
    layout = IndexLayout(tmp_path)
    sid, paths = layout.begin("r", "c")
    _finish(paths, "r")
    (paths.root / "chunks.parquet").write_bytes(b"tampered")
    with pytest.raises(LayoutError, match="checksum"):
        layout.publish("r", sid, keep=2)
    assert not (layout.repo_dir("r") / CURRENT).exists()


def test_unknown_repo_error_names_what_exists(tmp_path):
    layout = IndexLayout(tmp_path)
    sid, paths = layout.begin("known", "c")
    _finish(paths, "known")
    layout.publish("known", sid, keep=1)
    with pytest.raises(UnknownRepoError, match="known"):
        layout.current("nope")


def test_manifest_round_trip(tmp_path):
    layout = IndexLayout(tmp_path)
    sid, paths = layout.begin("r", "c")
    _finish(paths, "r")
    assert json.loads(paths.manifest.read_text())["repo"] == "r"
    assert paths.verify().dim == 3


# -- repository names: one reversible, collision-free mapping ------------------------------------

from semantica.layout import RepoState  # noqa: E402
from semantica.ondisk.layout_errors import BrokenSnapshotError  # noqa: E402
from semantica.ondisk.repo_names import RepoNameError, normalize_repo_name, repo_dir_name, repo_from_dir_name  # noqa: E402


def _publish(layout, repo, manifest_repo=None):
    sid, paths = layout.begin(repo, "c")
    _finish(paths, manifest_repo or normalize_repo_name(repo))
    layout.publish(repo, sid, keep=2)
    return sid


def test_plus_and_slash_names_get_their_own_directories(tmp_path):
    layout = IndexLayout(tmp_path)
    slash, plus = _publish(layout, "a/b"), _publish(layout, "a+b")
    assert layout.repo_dir("a/b") != layout.repo_dir("a+b")
    assert layout.current_id("a/b") == slash and layout.current_id("a+b") == plus
    assert layout.repos() == ["a+b", "a/b"]
    for name in ("a/b", "a+b", "50%off", "x/y+z%2B", "ünï/cödé"):
        assert repo_from_dir_name(repo_dir_name(name)) == name


@pytest.mark.parametrize("bad", ["", "  ", "/", "//", "..", "a/../b", "./a", "a\x00b", "a\nb", "a\rb", "a\tb",
                                 "a\x7fb", "a\u2028b", "x" * 300])
def test_bad_names_are_refused_with_a_name_error(tmp_path, bad):
    layout = IndexLayout(tmp_path)
    with pytest.raises(RepoNameError) as caught:
        layout.begin(bad, "c")
    assert isinstance(caught.value, ValueError) and "repository name" in str(caught.value)
    with pytest.raises(RepoNameError):
        layout.current(bad)
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


def test_names_are_normalised_once():
    assert normalize_repo_name(" owner//name/ ") == "owner/name"
    assert normalize_repo_name("cafe\u0301/x") == "caf\u00e9/x"  # NFC: one name, one directory
    with pytest.raises(RepoNameError, match="not an encoded"):
        repo_from_dir_name("a%zz")


def test_old_layout_directory_is_served_under_its_manifest_name_and_moved_aside(tmp_path):
    layout = IndexLayout(tmp_path)
    legacy = tmp_path / "a+b"  # the old mapping stored `a+b` here, where `a/b` now lives
    sid = "20200101T000000000000-old-000000"
    (legacy / sid).mkdir(parents=True)
    _finish(SnapshotPathsFor(legacy / sid), "a+b")
    (legacy / CURRENT).write_text(sid + "\n")
    assert layout.current("a+b").root == legacy / sid  # read transparently under its own name
    assert [(e.repo, e.state) for e in layout.listing()] == [("a+b", RepoState.OK)]
    new = _publish(layout, "a/b")  # indexing `a/b` first moves `a+b` to its own directory: nothing lost
    assert layout.current("a+b").root == tmp_path / "a%2Bb" / sid
    assert layout.current_id("a/b") == new
    assert layout.repos() == ["a+b", "a/b"]


def SnapshotPathsFor(root):  # noqa: N802 - reads like the class it builds
    from semantica.ondisk.snapshot_paths import SnapshotPaths

    return SnapshotPaths(root)


def test_a_directory_holding_another_repository_never_answers_for_it(tmp_path):
    sid = "20200101T000000000000-old-000000"
    (tmp_path / "a+b" / sid).mkdir(parents=True)
    _finish(SnapshotPathsFor(tmp_path / "a+b" / sid), "a+b")
    (tmp_path / "a+b" / CURRENT).write_text(sid + "\n")
    from semantica.config import load_config
    from semantica.snapshot import SnapshotSet

    snapshots = SnapshotSet(load_config(None, [f"paths.index_root={tmp_path}"], environ={}))
    with pytest.raises(UnknownRepoError, match="holds 'a\\+b'"):
        snapshots.get("a/b")
    assert snapshots.get("a+b").repo == "a+b"


def test_unreadable_current_is_a_broken_snapshot_not_an_unknown_repo(tmp_path):
    layout = IndexLayout(tmp_path)
    _publish(layout, "r")
    (layout.repo_dir("r") / CURRENT).write_text("\n")
    with pytest.raises(BrokenSnapshotError, match="holds no snapshot id"):
        layout.current("r")
    (entry,) = layout.listing()
    assert entry.state is RepoState.BROKEN and str(tmp_path) not in entry.error


# -- stale `.tmp` builds -----------------------------------------------------------------------

def test_stale_builds_are_removed_at_the_next_build_but_live_ones_are_kept(tmp_path):
    import os
    import time

    from semantica.ondisk.build_lock import BuildLock

    layout = IndexLayout(tmp_path, stale_build_s=60)
    _publish(layout, "r")
    repo_dir = layout.repo_dir("r")
    killed = repo_dir / "20200101T000000000000-killed-000000.tmp"  # a build whose process died: lock file free
    killed.mkdir()
    (repo_dir / "20200101T000000000000-killed-000000.lock").write_text("")
    old_unlocked = repo_dir / "20200101T000000000000-older-000000.tmp"  # from before locks, an hour old
    old_unlocked.mkdir()
    hour_ago = time.time() - 3600
    os.utime(old_unlocked, (hour_ago, hour_ago))
    fresh_unlocked = repo_dir / "20200101T000000000000-fresh-000000.tmp"  # young: could still be running
    fresh_unlocked.mkdir()
    live_id, live = IndexLayout(tmp_path, stale_build_s=60).begin("r", "c")  # a running build (its lock is held)
    assert BuildLock.is_held(repo_dir / f"{live_id}.lock")
    sid, paths = layout.begin("r", "c")  # the next build cleans up
    assert not killed.exists() and not (repo_dir / "20200101T000000000000-killed-000000.lock").exists()
    assert not old_unlocked.exists()
    assert fresh_unlocked.exists() and live.root.exists()
    _finish(paths, "r")
    layout.publish("r", sid, keep=2)
    assert layout.current_id("r") == sid and live.root.exists()


def test_a_pinned_snapshot_outlives_retention_until_its_build_lets_go(tmp_path):
    """A build links shards from the published snapshot: publishes meanwhile must not prune it."""
    layout = IndexLayout(tmp_path)
    first, paths = layout.begin("r", "c")
    _finish(paths, "r")
    layout.publish("r", first, keep=2)
    with layout.pin_current("r") as pinned:
        assert pinned is not None and pinned.root.name == first
        later = []
        for _ in range(2):
            sid, paths = layout.begin("r", "c")
            _finish(paths, "r")
            layout.publish("r", sid, keep=2)
            later.append(sid)
        assert (pinned.root / "chunks.parquet").read_bytes() == b"data"
    sid, paths = layout.begin("r", "c")
    _finish(paths, "r")
    layout.publish("r", sid, keep=2)
    remaining = sorted(p.name for p in layout.repo_dir("r").iterdir() if p.is_dir())
    assert remaining == sorted([later[-1], sid])


def test_pin_current_of_a_repository_without_snapshots_is_none(tmp_path):
    with IndexLayout(tmp_path).pin_current("nothing") as pinned:
        assert pinned is None


def test_a_build_lock_waits_out_a_cleanup_probing_it(tmp_path):
    """Stale-build cleanup probes a lock by taking it for a moment; a build starting then still locks."""
    import fcntl
    import os
    import threading

    from semantica.ondisk.build_lock import BuildLock

    path = tmp_path / "snap.lock"
    probe = os.open(path, os.O_CREAT | os.O_RDWR)
    fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
    threading.Timer(0.05, os.close, [probe]).start()
    lock = BuildLock(path)
    lock.acquire()
    assert BuildLock.is_held(path)
    lock.release()
    assert not path.exists()


def test_current_reads_the_pointer_once_until_a_publish_replaces_it(tmp_path, monkeypatch):
    """A query resolves CURRENT every time: an unchanged pointer costs a stat, not an open and a read, and a
    publish (a new file in its place) is still seen at once, by this reader and by another one."""
    import semantica.layout as layout_module

    reads: list[str] = []
    real = layout_module._read_pointer
    monkeypatch.setattr(layout_module, "_read_pointer", lambda repo_dir: reads.append(repo_dir.name) or real(repo_dir))
    layout, other = IndexLayout(tmp_path), IndexLayout(tmp_path)
    first = _publish(layout, "r")
    reads.clear()
    assert [layout.current_id("r") for _ in range(5)] == [first] * 5 and len(reads) <= 1
    second = _publish(other, "r")
    reads.clear()
    assert [layout.current_id("r") for _ in range(5)] == [second] * 5 and len(reads) == 1
    (layout.repo_dir("r") / CURRENT).write_text("\n")  # damaged in place: read again, refused
    with pytest.raises(BrokenSnapshotError, match="holds no snapshot id"):
        layout.current("r")

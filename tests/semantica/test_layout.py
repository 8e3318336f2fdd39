import json

import pytest

from semantica.layout import CURRENT, IndexLayout, LayoutError, UnknownRepoError, directory_checksums
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
    assert layout.verify(paths).dim == 3

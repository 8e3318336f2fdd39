"""index-batch manifests go through the same repository-name check as `semantica index`."""

from __future__ import annotations

import pytest

from pipelines.manifest import ManifestError, load_manifest


def test_names_are_normalised_and_bad_ones_refused(tmp_path):
    manifest = tmp_path / "repos.yaml"
    manifest.write_text(f"- {{name: ' team//lib ', path: {tmp_path}}}\n- {{name: 'team+lib', path: {tmp_path}}}\n")
    assert [s.name for s in load_manifest(manifest)] == ["team/lib", "team+lib"]
    for bad in ("'..'", "'a/../b'", '"a\\nb"', "'/'"):
        manifest.write_text(f"- {{name: {bad}, path: {tmp_path}}}\n")
        with pytest.raises(ManifestError, match=r"repos\[0\].*repository name"):
            load_manifest(manifest)


def test_names_equal_after_normalisation_are_duplicates(tmp_path):
    manifest = tmp_path / "repos.yaml"
    manifest.write_text(f"- {{name: a/b, path: {tmp_path}}}\n- {{name: 'a//b/', path: {tmp_path}}}\n")
    with pytest.raises(ManifestError, match="unique"):
        load_manifest(manifest)

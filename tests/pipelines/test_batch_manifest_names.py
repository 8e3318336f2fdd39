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


def test_a_manifest_that_is_not_yaml_is_a_clear_error(tmp_path):
    manifest = tmp_path / "repos.yaml"
    for text in ("- {name: a, path: [unclosed\n", "key: value\n  - bad: indent\n"):
        manifest.write_text(text)
        with pytest.raises(ManifestError, match=r"is not YAML \(line \d+, column \d+\)"):
            load_manifest(manifest)
    manifest.write_bytes(b"\xff\xfe- name: a\n")
    with pytest.raises(ManifestError, match="is not YAML"):
        load_manifest(manifest)


def _commit(root, text: str) -> str:
    import subprocess

    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "code.py").write_text(text)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "c"], check=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()


def test_clone_cache_keeps_names_and_urls_apart(tmp_path):
    """`q/r` and `q_r` mapped to one clone directory (and the url was never compared), so one repository
    was indexed with another's code."""
    import subprocess

    from pipelines.manifest import RepoSpec, resolve_repo_path

    beta, vault = tmp_path / "beta", tmp_path / "vault"
    heads = {str(beta): _commit(beta, "BETA = 1\n"), str(vault): _commit(vault, "VAULT = 2\n")}
    cache = tmp_path / "cache"
    dirs = {}
    for name, url in (("q/r", str(beta)), ("q_r", str(vault)), ("q/r", str(vault))):
        clone = resolve_repo_path(RepoSpec(name=name, url=url), cache, timeout_s=60)
        head = subprocess.run(["git", "-C", clone, "rev-parse", "HEAD"], check=True, capture_output=True,
                              text=True).stdout.strip()
        assert head == heads[url], (name, url)
        dirs[(name, url)] = clone
    assert len(set(dirs.values())) == 3


def test_a_cached_clone_of_another_url_is_refused(tmp_path):
    """N9: the directory name hashes the url, and the clone's own origin is compared too (a directory edited or
    put in the cache by hand): another repository's code is never indexed under this name."""
    import subprocess

    from pipelines.manifest import RepoSpec, resolve_repo_path

    beta, vault = tmp_path / "beta", tmp_path / "vault"
    _commit(beta, "BETA = 1\n")
    _commit(vault, "VAULT = 2\n")
    clone = resolve_repo_path(RepoSpec(name="q/r", url=str(beta)), tmp_path / "cache", timeout_s=60)
    subprocess.run(["git", "-C", clone, "remote", "set-url", "origin", str(vault)], check=True)
    with pytest.raises(RuntimeError, match=r"cached clone .* is of .*vault.*, not .*beta"):
        resolve_repo_path(RepoSpec(name="q/r", url=str(beta)), tmp_path / "cache", timeout_s=60)

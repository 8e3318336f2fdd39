"""Branch-aware snapshots on a small real git repo: a second branch parses and embeds only the files it
changes (the caches are keyed by content, not by NAME@BRANCH), manifests name branches, and retention
is per branch from conf."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from jobs.cli import main as cli_main
from pipelines.indexer import Indexer
from pipelines.manifest import ManifestError, load_manifest, resolve_repo_path
from semantica.layout import IndexLayout
from semantica.ondisk.branch_keys import branch_key
from semantica.ondisk.snapshot_paths import MANIFEST
from semantica.snapshot import Snapshot
from tests.conftest import make_config
from tests.pipelines.test_shards import FILES, GIT, git_repo

FEATURE_EDIT = "pkg/socket.py"
FEATURE_NEW = "pkg/feature_flag.py"


def git(repo: Path, *args: str) -> str:
    return subprocess.run([*GIT, "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def branched(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("branches")
    repo = git_repo(tmp / "repo", FILES)
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / FEATURE_EDIT).write_text(FILES[FEATURE_EDIT] + "\n\ndef socket_keepalive(sock):\n    return sock.ping()\n")
    (repo / FEATURE_NEW).write_text("def feature_enabled(name):\n    return name.startswith('beta')\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "feature")
    git(repo, "checkout", "-q", "main")
    config = make_config(tmp, "index.keep_snapshots=1", "branches.keep_snapshots=2", "branches.keep={feature: 1}",
                         private_cache=True)
    indexer = Indexer(config, progress=False)
    main = indexer.index(str(repo), branch_key("t/br", "main"), "main")
    feature = indexer.index(str(repo), branch_key("t/br", "feature"), "feature")
    return {"config": config, "repo": repo, "indexer": indexer, "main": main, "feature": feature}


def test_second_branch_parses_and_embeds_only_its_differing_files(branched) -> None:
    main, feature = branched["main"], branched["feature"]
    assert main.files_parsed == main.files == len(FILES) and main.chunks_embedded > 0
    assert feature.files == len(FILES) + 1
    assert feature.files_parsed == 2 and feature.files_reused == len(FILES) - 1  # the edited and the new file
    assert 0 < feature.chunks_embedded <= 3 and feature.chunks_embedded + feature.chunks_reused == feature.chunks
    layout = IndexLayout(branched["config"].paths.index_root)
    on_main = Snapshot.open(layout.current("t/br@main"), branched["config"])
    on_feature = Snapshot.open(layout.current("t/br@feature"), branched["config"])
    assert {c.repo for c in on_feature.chunks} == {"t/br@feature"}  # cached parses re-stamped for this branch
    shared = [c for c in on_feature.chunks if c.path == "pkg/retry.py"]
    twins = {(c.start_line, c.content_sha): c.chunk_id for c in on_main.chunks if c.path == "pkg/retry.py"}
    assert shared and all(twins[(c.start_line, c.content_sha)] != c.chunk_id for c in shared)
    assert {s.repo for s in on_feature.symbols} == {"t/br@feature"}
    assert "pkg/feature_flag.py::feature_enabled" in {s.symbol_id for s in on_feature.symbols}
    assert "pkg/feature_flag.py::feature_enabled" not in {s.symbol_id for s in on_main.symbols}
    assert on_feature.manifest.source["branch"] == "feature" and on_feature.manifest.commit == git(
        branched["repo"], "rev-parse", "feature")


def test_retention_keeps_exactly_n_per_branch(branched) -> None:
    config, repo, indexer = branched["config"], branched["repo"], branched["indexer"]
    for _ in range(2):  # main keeps 2 (branches.keep_snapshots), feature 1 (branches.keep), the default 1
        indexer.index(str(repo), branch_key("t/br", "main"), "main")
        indexer.index(str(repo), "t/br")
    indexer.index(str(repo), branch_key("t/br", "feature"), "feature")
    layout = IndexLayout(config.paths.index_root)

    def published(name: str) -> int:
        return sum(1 for p in layout.repo_dir(name).iterdir() if (p / MANIFEST).exists() and not p.name.endswith(".tmp"))

    assert (published("t/br"), published("t/br@main"), published("t/br@feature")) == (1, 2, 1)


def test_repos_lists_each_branch_with_commit_and_freshness(branched, capsys) -> None:
    config, repo = branched["config"], branched["repo"]
    code = cli_main(["repos", "--json", "--index-root", config.paths.index_root,
                     "--set", f"paths.cache_dir={config.paths.cache_dir}"])
    assert code == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["t/br@feature"]["branch"] == "feature" and rows["t/br@main"]["branch"] == "main"
    assert rows["t/br@feature"]["commit"] == git(repo, "rev-parse", "feature")
    assert rows["t/br@main"]["commit"] == git(repo, "rev-parse", "main")
    assert rows["t/br@feature"]["stale"] is False and not rows["t/br@feature"]["default_branch"]


def test_manifest_refs_publish_one_snapshot_per_branch(branched, tmp_path) -> None:
    repo = branched["repo"]
    manifest = tmp_path / "repos.yaml"
    manifest.write_text(f"- {{name: t/br, path: {repo}}}\n- {{name: t/br, path: {repo}, refs: [main, feature]}}\n")
    specs = load_manifest(manifest)
    assert [(s.name, s.branch) for s in specs] == [("t/br", ""), ("t/br@main", "main"), ("t/br@feature", "feature")]
    config = make_config(tmp_path, private_cache=True)
    summary = Indexer(config, progress=False).run(specs[1:])  # one run, both branches, a fresh cache
    assert summary.ok
    by_name = {r.repo: r for r in summary.repos}
    parsed = by_name["t/br@main"].files_parsed + by_name["t/br@feature"].files_parsed
    assert parsed == len(FILES) + 2  # every distinct (path, blob) parsed once across the two branches
    layout = IndexLayout(config.paths.index_root)
    assert set(layout.repos()) == {"t/br@main", "t/br@feature"}
    for bad, reason in (("refs: main", "list"), ("commit: abc, refs: [main]", "at most one")):
        manifest.write_text(f"- {{name: t/br, path: {repo}, {bad}}}\n")
        with pytest.raises(ManifestError, match=reason):
            load_manifest(manifest)
    manifest.write_text(f"- {{name: 't/br@x', path: {repo}, refs: [main]}}\n")
    with pytest.raises(ManifestError, match="holds '@'"):
        load_manifest(manifest)


def test_branches_of_one_url_share_one_clone(branched, tmp_path) -> None:
    manifest = tmp_path / "repos.yaml"
    manifest.write_text(f"- {{name: t/br, url: 'file://{branched['repo']}', refs: [main, feature]}}\n")
    clones = {resolve_repo_path(spec, tmp_path / "cache", 60) for spec in load_manifest(manifest)}
    assert len(clones) == 1 and git(Path(clones.pop()), "rev-parse", "feature") == git(branched["repo"], "rev-parse",
                                                                                         "feature")

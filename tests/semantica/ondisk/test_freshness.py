"""Freshness of real snapshots of small git repositories after real edits, commits and branch switches."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from semantica.layout import IndexLayout
from semantica.snapshot import Snapshot
from tests.conftest import make_config

FILES = {
    "pkg/calc.py": "def add(a, b):\n    return a + b\n",
    "pkg/text.py": "def shout(word):\n    return word.upper()\n",
    "docs/guide.md": "# Guide\n\nAdd numbers with add.\n",
    "pkg/__init__.py": "",
}


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
                          check=True, capture_output=True)
    return done.stdout.decode().strip()


def index(root: Path, tmp_path: Path, commit: str | None = None) -> Snapshot:
    from pipelines.indexer import Indexer

    config = make_config(tmp_path)
    Indexer(config, progress=False).index(str(root), "t/repo", commit)
    return Snapshot.open(IndexLayout(config.paths.index_root).current("t/repo"), config)


def test_clean_tree_is_fresh_and_records_its_source(repo: Path, tmp_path: Path) -> None:
    snapshot = index(repo, tmp_path)
    fresh = snapshot.freshness()
    assert fresh.stale is False and fresh.reason == "" and fresh.changed_count == 0
    assert fresh.source == "worktree" and fresh.branch == "main" and fresh.path == str(repo.resolve())
    assert fresh.commit == git(repo, "rev-parse", "HEAD") == fresh.current_commit
    assert fresh.built_at == snapshot.manifest.created
    # every indexed file's blob sha is recorded, the empty __init__.py (no chunk) included
    assert snapshot.file_blobs.blobs["pkg/__init__.py"] == git(repo, "rev-parse", "HEAD:pkg/__init__.py")
    assert snapshot.file_blobs.blobs["pkg/calc.py"] == git(repo, "rev-parse", "HEAD:pkg/calc.py")


def test_edited_added_deleted_renamed_files(repo: Path, tmp_path: Path) -> None:
    snapshot = index(repo, tmp_path)
    (repo / "pkg/calc.py").write_text("def add(a, b):\n    return b + a\n")
    (repo / "pkg/new.py").write_text("def fresh():\n    return 1\n")
    (repo / "logo.png").write_bytes(b"\x89PNG not indexed")  # the indexer would skip it: not a change
    (repo / "docs/guide.md").unlink()
    (repo / "pkg/text.py").rename(repo / "pkg/words.py")
    fresh = snapshot.freshness()
    assert fresh.stale is True
    assert fresh.changed == {"edited": ["pkg/calc.py"], "added": ["pkg/new.py"], "deleted": ["docs/guide.md"],
                             "renamed": ["pkg/text.py -> pkg/words.py"]}
    assert fresh.changed_count == 4
    assert "4 indexed file(s) changed" in fresh.reason and "renamed 1" in fresh.reason


def test_edit_then_revert_is_fresh_by_content(repo: Path, tmp_path: Path) -> None:
    snapshot = index(repo, tmp_path)
    original = (repo / "pkg/calc.py").read_text()
    (repo / "pkg/calc.py").write_text(original + "# tmp\n")
    assert snapshot.freshness().stale is True
    (repo / "pkg/calc.py").write_text(original)
    assert snapshot.freshness().stale is False


def test_dirty_tree_snapshot_then_commit_of_the_same_content(repo: Path, tmp_path: Path) -> None:
    (repo / "pkg/calc.py").write_text("def add(a, b):\n    return a + b + 0\n")
    (repo / "pkg/extra.py").write_text("X = 1\n")
    snapshot = index(repo, tmp_path)  # built from a dirty tree: it indexed the edits
    assert snapshot.freshness().stale is False
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "commit what was indexed")
    fresh = snapshot.freshness()
    assert fresh.stale is False and "HEAD moved" in fresh.reason and "unchanged" in fresh.reason
    (repo / "pkg/extra.py").write_text("X = 2\n")
    assert snapshot.freshness().changed["edited"] == ["pkg/extra.py"]


def test_new_commit(repo: Path, tmp_path: Path) -> None:
    snapshot = index(repo, tmp_path)
    before = git(repo, "rev-parse", "HEAD")
    (repo / "pkg/calc.py").write_text("def add(a, b):\n    return sum((a, b))\n")
    git(repo, "commit", "-qam", "edit")
    fresh = snapshot.freshness()
    assert fresh.stale is True and fresh.changed["edited"] == ["pkg/calc.py"]
    assert fresh.commit == before != fresh.current_commit == git(repo, "rev-parse", "HEAD")
    assert f"HEAD moved from {before[:12]} (main)" in fresh.reason


def test_switched_branch(repo: Path, tmp_path: Path) -> None:
    git(repo, "checkout", "-qb", "feature")
    (repo / "pkg/feature.py").write_text("def feature():\n    return 'on'\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "feature")
    git(repo, "checkout", "-q", "main")
    snapshot = index(repo, tmp_path)
    git(repo, "checkout", "-q", "feature")
    fresh = snapshot.freshness()
    assert fresh.stale is True and fresh.branch == "main" and fresh.current_branch == "feature"
    assert fresh.changed["added"] == ["pkg/feature.py"] and "(main) to" in fresh.reason and "(feature)" in fresh.reason
    git(repo, "checkout", "-q", "main")
    assert snapshot.freshness().stale is False


def test_git_ref_snapshot_follows_its_branch(repo: Path, tmp_path: Path) -> None:
    snapshot = index(repo, tmp_path, commit="main")
    assert snapshot.freshness().stale is False and snapshot.freshness().source == "git"
    (repo / "pkg/calc.py").write_text("def add(a, b):\n    return a - -b\n")  # the working tree does not matter
    assert snapshot.freshness().stale is False
    git(repo, "commit", "-qam", "edit")
    fresh = snapshot.freshness()
    assert fresh.stale is True and fresh.changed["edited"] == ["pkg/calc.py"] and "ref main moved" in fresh.reason


def _latin1(repo: Path, name: bytes) -> Path:
    """A file whose name is Latin-1 bytes (not UTF-8), which discovery skips by name."""
    return Path(os.fsdecode(os.fsencode(repo) + b"/" + name))


@pytest.mark.parametrize("commit", [None, "main"])
def test_a_file_name_that_is_not_utf8_never_makes_the_snapshot_stale(repo: Path, tmp_path: Path, commit) -> None:
    """N8: discovery skips such a name, so editing it, adding another, or committing either is no indexed change;
    the snapshot stays fresh until an indexed file changes (before, it was stale forever: 'added caf\\udce9.py')."""
    _latin1(repo, b"caf\xe9.py").write_text("def w():\n    pass\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a Latin-1 name")
    snapshot = index(repo, tmp_path, commit=commit)
    assert snapshot.freshness().stale is False
    _latin1(repo, b"caf\xe9.py").write_text("def w():\n    return 1\n")
    _latin1(repo, b"na\xefve.py").write_text("def n():\n    pass\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "edit the Latin-1 names")
    fresh = snapshot.freshness()
    assert fresh.stale is False and fresh.changed_count == 0, fresh.reason
    (repo / "pkg/calc.py").write_text("def add(a, b):\n    return b + a\n")
    git(repo, "commit", "-qam", "edit an indexed file")
    fresh = snapshot.freshness()
    assert fresh.stale is True and fresh.changed["edited"] == ["pkg/calc.py"] and fresh.changed["added"] == []


def test_pinned_commit_never_goes_stale_and_a_missing_source_is_unknown(repo: Path, tmp_path: Path) -> None:
    sha = git(repo, "rev-parse", "HEAD")
    snapshot = index(repo, tmp_path, commit=sha)
    (repo / "pkg/calc.py").write_text("changed\n")
    git(repo, "commit", "-qam", "edit")
    assert snapshot.freshness().stale is False
    shutil.rmtree(repo)
    fresh = snapshot.freshness()
    assert fresh.stale is None and "not reachable" in fresh.reason


def test_status_and_query_commands_print_freshness(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import json

    from jobs.cli import main

    snapshot = index(repo, tmp_path)
    root = str(snapshot.config.paths.index_root)
    cache = f"paths.cache_dir={snapshot.config.paths.cache_dir}"
    assert main(["status", "--index-root", root, "--set", cache]) == 0
    assert "t/repo: fresh: snapshot" in capsys.readouterr().out
    (repo / "pkg/calc.py").write_text("def add(a, b):\n    return 0\n")
    assert main(["status", "--index-root", root, "--set", cache]) == 0
    out = capsys.readouterr().out
    assert "t/repo: STALE" in out and "edited   pkg/calc.py" in out
    assert main(["status", "--json", "--index-root", root, "--set", cache]) == 0
    (report,) = json.loads(capsys.readouterr().out)
    assert report["stale"] is True and report["changed"]["edited"] == ["pkg/calc.py"]
    args = ["query", "add", "--index-root", root, "--set", cache, "--set", "late_interaction.enabled=false"]
    assert main([*args, "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["freshness"]["t/repo"]["stale"] is True and answer["freshness"]["t/repo"]["commit"]
    assert main(args) == 0
    assert "stale: t/repo: 1 indexed file(s) changed" in capsys.readouterr().out

"""Branch-aware snapshots: `index --ref`, `query --branch`, `repos` with branches, commits and freshness."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from jobs.cli import main
from tests.conftest import make_config


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
                          check=True, capture_output=True)
    return done.stdout.decode().strip()


def _one_commit_repo(tmp_path: Path) -> Path:
    """A git repository on `main` whose one commit holds `core.py` (`shared_helper`)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "core.py").write_text("def shared_helper(x):\n    return x * 2\n")
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    return repo


def test_one_snapshot_per_branch(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    repo = _one_commit_repo(tmp_path)
    git(repo, "checkout", "-qb", "feature")
    (repo / "extra.py").write_text("def quantum_flux_capacitor(level):\n    return level + 88\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "feature")
    git(repo, "checkout", "-q", "main")

    config = make_config(tmp_path)
    common = ["--index-root", str(config.paths.index_root), "--set", f"paths.cache_dir={config.paths.cache_dir}"]
    assert main(["index", "--repo", str(repo), "--name", "t/b", "--json", *common]) == 0
    assert main(["index", "--repo", str(repo), "--name", "t/b", "--ref", "feature", "--json", *common]) == 0
    (feature_summary,) = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    # core.py's vectors come from the content-keyed embedding cache (the parse cache is keyed per name: re-parsed)
    assert feature_summary["repo"] == "t/b@feature" and feature_summary["chunks_reused"] >= 1

    query = ["query", "quantum_flux_capacitor", "--json", "--set", "late_interaction.enabled=false", *common]
    assert main(query) == 0
    default = json.loads(capsys.readouterr().out)
    assert set(default["snapshots"]) == {"t/b"}  # the default branch only
    assert not any("quantum_flux_capacitor" in h["content"] for h in default["hits"])
    assert main([*query, "--branch", "feature"]) == 0
    on_feature = json.loads(capsys.readouterr().out)
    assert set(on_feature["snapshots"]) == {"t/b@feature"}
    assert "quantum_flux_capacitor" in on_feature["hits"][0]["content"]
    assert on_feature["freshness"]["t/b@feature"]["stale"] is False
    assert main([*query, "--branch", "nope"]) == 1
    assert "no repository has a snapshot of branch 'nope'" in capsys.readouterr().err

    assert main(["repos", "--json", *common]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["t/b"]["branch"] == "main" and rows["t/b"]["default_branch"] is True
    assert rows["t/b@feature"]["repo"] == "t/b" and rows["t/b@feature"]["branch"] == "feature"
    assert rows["t/b@feature"]["commit"] == git(repo, "rev-parse", "feature")
    assert rows["t/b@feature"]["stale"] is False and rows["t/b"]["stale"] is False

    git(repo, "checkout", "-q", "feature")
    (repo / "extra.py").write_text("def quantum_flux_capacitor(level):\n    return level + 89\n")
    git(repo, "commit", "-qam", "more")
    assert main(["repos", "--json", *common]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["t/b@feature"]["stale"] is True and "ref feature moved" in rows["t/b@feature"]["freshness"]["reason"]
    assert rows["t/b"]["stale"] is True  # the working tree switched to feature: its files differ from main's snapshot


def test_the_missing_branch_errors_suggest_a_command_index_runs(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """N19: each unknown-branch error's advice, with its placeholders filled in, is a command `index` accepts and
    that publishes what the query asked for (it used to suggest `--name NAME@BRANCH`, which `index` refuses)."""
    repo = _one_commit_repo(tmp_path)
    git(repo, "branch", "feature")
    git(repo, "branch", "hotfix")
    config = make_config(tmp_path)
    common = ["--index-root", str(config.paths.index_root), "--set", f"paths.cache_dir={config.paths.cache_dir}"]
    assert main(["index", "--repo", str(repo), "--name", "t/b", *common]) == 0
    capsys.readouterr()
    query = ["query", "shared_helper", "--json", "--set", "late_interaction.enabled=false", *common]
    for asked, branch in ((["--repo", "t/b@feature"], "feature"), (["--branch", "hotfix"], "hotfix")):
        assert main([*query, *asked]) == 1
        error = capsys.readouterr().err
        [advice] = re.findall(r"`(semantica index [^`]+)`", error)
        argv = [str(repo) if word == "PATH" else "t/b" if word == "NAME" else word for word in shlex.split(advice)]
        assert main([*argv[1:], *common]) == 0, (error, advice)
        capsys.readouterr()
        assert main([*query, *asked]) == 0, advice
        assert set(json.loads(capsys.readouterr().out)["snapshots"]) == {f"t/b@{branch}"}

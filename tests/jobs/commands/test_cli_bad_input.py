"""Bad command-line input gets one clear line on stderr and a non-zero exit, before any work is done."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.manifest import ManifestError, load_manifest
from tests.conftest import REPO_ROOT

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "jobs.cli", *args], cwd=REPO_ROOT, env=full_env,
                          capture_output=True, text=True, timeout=300)


def one_line_error(result: subprocess.CompletedProcess, command: str) -> str:
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert lines and lines[-1].startswith(f"semantica {command}: error:"), result.stderr[-2000:]
    return lines[-1]


@pytest.fixture()
def checkout(tmp_path) -> Path:
    repo = tmp_path / "alpha"
    repo.mkdir()
    (repo / "ledger.py").write_text("def parse_ledger(text):\n    return text.split()\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True)
    return repo


@pytest.mark.parametrize("name", ["team-a/alpha@feature", "alpha@", "@main"])
def test_index_name_with_a_branch_separator_is_refused(checkout, tmp_path, name):
    """`--name team-a/alpha@feature` would publish this checkout as team-a/alpha's branch snapshot
    (readable under team-a/*); branch snapshots come only from --ref."""
    root = tmp_path / "index"
    result = run_cli("index", "--repo", str(checkout), "--name", name, "--index-root", str(root))
    line = one_line_error(result, "index")
    assert "'@'" in line and "--ref" in line
    assert not root.exists() or not any(root.iterdir())


def test_index_name_with_a_ref_is_refused_too(checkout, tmp_path):
    root = tmp_path / "index"
    result = run_cli("index", "--repo", str(checkout), "--name", "alpha@x", "--ref", "HEAD", "--index-root", str(root))
    assert "'@'" in one_line_error(result, "index")
    assert not root.exists() or not any(root.iterdir())


def test_watch_name_with_a_branch_separator_is_refused(checkout, tmp_path):
    result = run_cli("watch", str(checkout), "--name", "alpha@feature", "--index-root", str(tmp_path / "index"))
    assert "'@'" in one_line_error(result, "watch")


def test_manifest_name_with_a_branch_separator_is_refused(tmp_path):
    manifest = tmp_path / "repos.yaml"
    manifest.write_text(f"- {{name: 'team-a/alpha@feature', path: {tmp_path}}}\n")
    with pytest.raises(ManifestError, match=r"repos\[0\].*'@'.*refs"):
        load_manifest(manifest)
    manifest.write_text(f"- {{name: team-a/alpha, path: {tmp_path}, refs: [feature]}}\n")
    assert [s.name for s in load_manifest(manifest)] == ["team-a/alpha@feature"]  # the way to publish a branch


@pytest.mark.parametrize("override", ["fusion.rrf_k=[[[", "fusion.rrf_k={", "fusion.rrf_k='",
                                      "fusion.rrf_k=!!python/object:os.system x", "fusion.rrf_k=a: b: c"])
def test_malformed_set_value_is_one_line(override, tmp_path):
    line = one_line_error(run_cli("repos", "--set", override, "--index-root", str(tmp_path)), "repos")
    assert "not a valid YAML value" in line and override.split("=", 1)[0] in line


@pytest.mark.parametrize("override", ["fusion.rrf_k=[1]", "fusion=3", "nosuch.key=1", "fusion.rrf_k.vector=abc"])
def test_wrongly_typed_set_value_is_one_line(override, tmp_path):
    one_line_error(run_cli("repos", "--set", override, "--index-root", str(tmp_path)), "repos")


def test_malformed_environment_override_is_one_line(tmp_path):
    result = run_cli("repos", "--index-root", str(tmp_path), env={"SEMANTICA__FUSION__RRF_K": "[[["})
    assert "SEMANTICA__FUSION__RRF_K" in one_line_error(result, "repos")


def test_malformed_config_file_is_one_line(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("fusion: [[[\n")
    assert "not valid YAML" in one_line_error(run_cli("repos", "--config", str(config)), "repos")

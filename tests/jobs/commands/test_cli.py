"""The `semantica` command line: help, JSON output and clear errors, through a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run([sys.executable, "-m", "jobs.cli", *args], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("command", ["index", "repos", "query"])
def test_help_explains_each_command(command):
    result = run_cli(command, "--help")
    assert result.returncode == 0 and "--index-root" in result.stdout


def test_repos_and_query_json_over_a_real_index(indexed_self):
    root = indexed_self.config.paths.index_root
    cache = f"paths.cache_dir={indexed_self.config.paths.cache_dir}"
    repos = run_cli("repos", "--json", "--index-root", root)
    assert repos.returncode == 0
    (listed,) = json.loads(repos.stdout)
    assert listed["repo"] == indexed_self.name and listed["counts"]["chunks"] > 0
    query = run_cli("query", "SnapshotWriter", "--json", "--k", "3", "--index-root", root, "--set", cache)
    assert query.returncode == 0, query.stderr
    response = json.loads(query.stdout)  # stdout is JSON only: Java and model logs stay off it
    assert response["hits"][0]["symbol"] == "SnapshotWriter"
    assert response["functions"] and response["files"][0]["path"] == "pipelines/write.py"
    unquoted = run_cli("query", "snapshot", "writer", "--json", "--k", "3", "--index-root", root, "--set", cache)
    assert unquoted.returncode == 0, unquoted.stderr  # the words of an unquoted question are one query
    assert json.loads(unquoted.stdout)["query"] == "snapshot writer"
    readable = run_cli("query", "SnapshotWriter", "--explain", "--k", "2", "--index-root", root, "--set", cache)
    assert readable.returncode == 0 and "pipelines/write.py:" in readable.stdout and "why:" in readable.stdout


def test_user_errors_are_one_line_not_tracebacks(indexed_self, tmp_path):
    root = indexed_self.config.paths.index_root
    for args, message in [
        (("query", "x", "--repo", "no/such", "--index-root", root), "no published snapshot"),
        (("query", "   ", "--index-root", root), "query is empty"),
        (("query", "x", "--k", "0", "--index-root", root), "k must be"),
        (("query", "x", "--set", "nope.key=1", "--index-root", root), "unknown key"),
        (("query", "x", "--index-root", str(tmp_path / "empty")), "no repository is indexed"),
    ]:
        result = run_cli(*args)
        assert result.returncode == 1, (args, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr, result.stderr

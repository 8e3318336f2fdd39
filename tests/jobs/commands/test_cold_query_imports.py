"""The CLI's query path with the daemon off pays only for what a query uses: no torch, Ray, FastAPI,
MCP, transformers or pandas import, and no JVM when no lexical list is asked for (real queries over a
real index, each run as `python -m jobs.cli query` in a fresh process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pipelines.indexer import Indexer
from tests.conftest import REPO_ROOT, make_config

HEAVY = ("torch", "ray", "fastapi", "mcp", "transformers", "starlette", "uvicorn", "pandas")
FILES = {
    "calc.py": 'def add(a, b):\n    """Add two numbers."""\n    return a + b\n\n\n'
               'def total(items):\n    return sum(add(0, i) for i in items)\n',
    "ledger.py": 'from calc import total\n\n\nclass Ledger:\n    def record(self, amount):\n        return total([amount])\n',
}
# runs the CLI as `python -m jobs.cli` does, then reports what the process imported
PROBE = """
import json, runpy, sys
sys.argv = ["semantica", *json.loads(sys.argv[1])]
code = 0
try:
    runpy.run_module("jobs.cli", run_name="__main__")
except SystemExit as exc:
    code = exc.code or 0
print("MODULES=" + json.dumps(sorted({m.split('.')[0] for m in sys.modules})), flush=True)
sys.exit(code)
"""


@pytest.fixture(scope="module")
def index_settings(tmp_path_factory) -> list[str]:
    tmp = tmp_path_factory.mktemp("cold")
    repo = tmp / "repo"
    repo.mkdir()
    for name, text in FILES.items():
        (repo / name).write_text(text)
    git = ["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    config = make_config(tmp)
    Indexer(config, progress=False).index(str(repo), "t/ledger")
    return ["--set", f"paths.index_root={config.paths.index_root}", "--set", f"paths.cache_dir={config.paths.cache_dir}"]


def _cold_query(settings: list[str], *extra: str) -> tuple[list[dict], set[str]]:
    args = ["query", "where is a ledger amount recorded", "--repo", "t/ledger", "--json", *extra, *settings]
    env = {**os.environ, "SEMANTICA__DAEMON__ENABLED": "false"}
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    answer, modules_line = done.stdout.rsplit("MODULES=", 1)
    return json.loads(answer)["hits"], set(json.loads(modules_line))


def test_a_cold_cli_query_imports_no_torch_ray_fastapi_or_mcp(index_settings) -> None:
    hits, modules = _cold_query(index_settings)
    assert any(h["path"] == "ledger.py" for h in hits)  # a real answer, not an early exit
    assert {"onnxruntime", "jnius"} <= modules  # the query really encoded and searched Lucene
    assert not modules & set(HEAVY), f"the cold query path imported {sorted(modules & set(HEAVY))}"


def test_a_query_without_a_lexical_list_starts_no_jvm(index_settings) -> None:
    hits, modules = _cold_query(index_settings, "--strategy", "vector")
    assert any(h["path"] == "ledger.py" for h in hits)
    assert "onnxruntime" in modules and "jnius" not in modules

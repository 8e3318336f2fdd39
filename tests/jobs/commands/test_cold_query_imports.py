"""The CLI's query path with the daemon off pays only for what a query uses: no torch, Ray, FastAPI,
MCP, transformers or pandas import, no JVM when no lexical list is asked for, no history tables (polars,
bm25s) for an identifier lookup, and no interpreter teardown once the answer is out (real queries over a
real index, each run as `python -m jobs.cli query` in a fresh process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from jobs.commands.query import COLD_SWITCH_INTERVAL_S
from pipelines.indexer import Indexer
from tests.conftest import REPO_ROOT, make_config

PYTHON_SWITCH_INTERVAL_S = 0.005  # CPython's default (sys.setswitchinterval's documentation)
HEAVY = ("torch", "ray", "fastapi", "mcp", "transformers", "starlette", "uvicorn", "pandas")
HISTORY_ONLY = ("polars", "bm25s")  # read when a query opens the snapshot's history (the localizer's voters)
FILES = {
    "calc.py": 'def add(a, b):\n    """Add two numbers."""\n    return a + b\n\n\n'
               'def total(items):\n    return sum(add(0, i) for i in items)\n',
    "ledger.py": 'from calc import total\n\n\nclass Ledger:\n    def record(self, amount):\n        return total([amount])\n',
}
# runs the CLI as `python -m jobs.cli` does, then (at exit) reports what the process imported and whether the
# interpreter tore down its modules (a module global's finalizer prints TORN_DOWN)
PROBE = """
import atexit, json, runpy, sys
sys.argv = ["semantica", *json.loads(sys.argv[1])]

class Witness:
    def __del__(self):
        sys.__stdout__.write("TORN_DOWN\\n")
        sys.__stdout__.flush()

sys.modules["__main__"].witness = Witness()
atexit.register(lambda: print("MODULES=" + json.dumps(sorted({m.split('.')[0] for m in sys.modules})), flush=True))
runpy.run_module("jobs.cli", run_name="__main__")
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


def _cold_run(settings: list[str], query: str, *extra: str) -> tuple[list[dict], set[str], str]:
    """The hits, the top-level modules imported and what the process printed after them."""
    args = ["query", query, "--repo", "t/ledger", "--json", *extra, *settings]
    env = {**os.environ, "SEMANTICA__DAEMON__ENABLED": "false"}
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    answer, after = done.stdout.rsplit("MODULES=", 1)
    modules_line, _, rest = after.partition("\n")
    return json.loads(answer)["hits"], set(json.loads(modules_line)), rest


def _cold_query(settings: list[str], *extra: str) -> tuple[list[dict], set[str]]:
    hits, modules, _ = _cold_run(settings, "where is a ledger amount recorded", *extra)
    return hits, modules


def test_a_cold_cli_query_imports_no_torch_ray_fastapi_or_mcp(index_settings) -> None:
    hits, modules = _cold_query(index_settings)
    assert any(h["path"] == "ledger.py" for h in hits)  # a real answer, not an early exit
    assert {"openvino", "jnius"} <= modules  # the query really encoded (the default runtime) and searched Lucene
    assert not modules & set(HEAVY), f"the cold query path imported {sorted(modules & set(HEAVY))}"


def test_a_query_without_a_lexical_list_starts_no_jvm(index_settings) -> None:
    hits, modules = _cold_query(index_settings, "--strategy", "vector")
    assert any(h["path"] == "ledger.py" for h in hits)
    assert "openvino" in modules and "jnius" not in modules


def test_an_identifier_query_reads_no_history_and_skips_the_teardown(index_settings) -> None:
    hits, modules, after = _cold_run(index_settings, "Ledger")
    assert hits[0]["path"] == "ledger.py" and hits[0]["symbol"] == "Ledger"
    assert {"openvino", "jnius"} <= modules  # vector and lexical lists, as the default plan asks
    assert not modules & set(HISTORY_ONLY), f"an identifier query imported {sorted(modules & set(HISTORY_ONLY))}"
    # scipy.sparse (a fifth of a second) loads only with a localizer table or at index time: the graph walk is numpy
    assert "scipy" not in modules
    assert "TORN_DOWN" not in after  # atexit ran (MODULES was printed), the interpreter's teardown did not


JVM_ARGS_PROBE = """
import atexit, json, runpy, sys
sys.argv = ["semantica", *json.loads(sys.argv[1])]

def jvm_args():
    from jnius import autoclass
    arguments = autoclass("java.lang.management.ManagementFactory").getRuntimeMXBean().getInputArguments()
    print("SWITCH=" + json.dumps([during, sys.getswitchinterval()]), flush=True)
    print("JVM_ARGS=" + json.dumps([arguments.get(n) for n in range(arguments.size())]), flush=True)

import jobs.commands.query as query
answer_once, during = query._answer_once, []

def observed(*args, **kwargs):  # records the interval the search runs under; the answer is the real one
    during.append(sys.getswitchinterval())
    return answer_once(*args, **kwargs)

query._answer_once = observed
atexit.register(jvm_args)
runpy.run_module("jobs.cli", run_name="__main__")
"""


@pytest.fixture(scope="module")
def cold_process(index_settings) -> tuple[dict, float, list[str]]:
    """One cold identifier query: its answer, the process's GIL switch interval and its JVM's input arguments."""
    args = ["query", "Ledger", "--repo", "t/ledger", "--json", *index_settings]
    env = {**os.environ, "SEMANTICA__DAEMON__ENABLED": "false"}
    done = subprocess.run([sys.executable, "-c", JVM_ARGS_PROBE, json.dumps(args)], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    answer, after = done.stdout.rsplit("SWITCH=", 1)
    switch, jvm = after.split("JVM_ARGS=", 1)
    return json.loads(answer), json.loads(switch), json.loads(jvm)


def test_a_cold_query_runs_the_jvm_with_the_quick_compiler_only(cold_process) -> None:
    """The no-daemon CLI answers once and ends: its JVM skips the optimising JIT's background compiles."""
    answer, _, jvm = cold_process
    assert answer["hits"][0]["symbol"] == "Ledger"
    assert "-XX:TieredStopAtLevel=1" in jvm


def test_a_cold_query_hands_the_gil_over_within_half_a_millisecond(cold_process) -> None:
    """Its loads (the Lucene shards open through thousands of JNI calls) wait less for one another."""
    answer, switch, _ = cold_process
    assert answer["hits"][0]["symbol"] == "Ledger"
    (during,), after = switch
    assert during == COLD_SWITCH_INTERVAL_S < PYTHON_SWITCH_INTERVAL_S
    assert after == PYTHON_SWITCH_INTERVAL_S  # given back once the answer is in: an in-process caller keeps its own

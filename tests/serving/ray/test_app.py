"""The Serve deployment graph in local testing mode: fan-out, degraded answers, error mapping."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from ray import serve

from semantica.api import QueryError
from semantica.config import load_config
from semantica.errors import describe, kind_of
from semantica.ondisk.layout_errors import UnknownRepoError
from serving.ray.app import (
    FeedbackLog,
    StageDeployment,
    StageUnavailable,
    build_graph,
    deployment_options,
)
from serving.ray.remote import stage_deployments
from tests.conftest import SERVE_STARTUP_S, make_config

pytestmark = pytest.mark.timeout(300)
REPO_NAME = "tiny/shop"
FILES = {
    "shop/cart.py": 'from shop.prices import price_of\n\n\nclass Cart:\n    """A shopping cart."""\n\n'
                    '    def __init__(self):\n        self.items = []\n\n    def add_item(self, name, qty=1):\n'
                    '        self.items.append((name, qty))\n\n    def total(self):\n'
                    '        return sum(price_of(n) * q for n, q in self.items)\n',
    "shop/prices.py": 'PRICES = {"apple": 3, "pear": 4}\n\n\ndef price_of(name):\n'
                      '    """Price of one item in cents; unknown items cost nothing."""\n'
                      '    return PRICES.get(name, 0)\n',
    "README.md": "# Shop\n\nA tiny shop: carts, prices and totals.\n",
}


def make_tiny_index(root: Path, *overrides: str):
    """A real git repo in `root/repo`, indexed with Indexer; returns its config (Serve given `SERVE_STARTUP_S`)."""
    from pipelines.indexer import Indexer

    repo = root / "repo"
    for name, text in FILES.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@e", "-c", "user.name=t", "commit", "-qm", "i"],
                   check=True)
    config = make_config(root, f"serve.feedback_dir={root / 'feedback'}", f"ray.startup_timeout_s={SERVE_STARTUP_S}",
                         *overrides)
    Indexer(config, progress=False).index(str(repo), REPO_NAME)
    return config


@pytest.fixture(scope="module")
def tiny_config(tmp_path_factory):
    return make_tiny_index(tmp_path_factory.mktemp("serve-app"))


@serve.deployment
class BrokenRetriever(StageDeployment.func_or_class):
    def search(self, repo, query, k, filters):
        raise RuntimeError("vector index shard is corrupt")


@serve.deployment
class BrokenFusion(StageDeployment.func_or_class):
    def call(self, method, *args):
        raise ConnectionError("fusion replica unreachable")


def _handle(config, **overrides):
    return serve.run(build_graph(config, deployment_options(None), overrides), _local_testing_mode=True)


def test_search_fans_out_to_every_retriever(tiny_config):
    handle = _handle(tiny_config)
    answer = handle.search.remote({"query": "total price of the cart items", "k": 5, "explain": True}).result()
    assert answer["degraded"] == [] and answer["hits"]
    for stage in ("intent", "vector", "lexical", "symbol", "graph", "fusion", "late_interaction", "context"):
        assert stage in answer["timings_ms"], stage
    assert any(h["path"] == "shop/cart.py" for h in answer["hits"])
    assert answer["hits"][0]["explanation"] and answer["hits"][0]["features"]
    assert answer["context"]["blocks"] and answer["snapshots"].keys() == {REPO_NAME}
    assert handle.health.remote().result()["status"] == "ok"


def test_raising_retriever_degrades_the_answer(tiny_config):
    handle = _handle(tiny_config, VectorRetriever=BrokenRetriever)
    answer = handle.search.remote({"query": "price_of", "k": 5}).result()
    assert [d["stage"] for d in answer["degraded"]] == ["vector"]
    assert "corrupt" in answer["degraded"][0]["error"]
    assert answer["hits"] and "vector" not in answer["hits"][0]["ranks"]


def test_mandatory_stage_down_is_503(tiny_config):
    handle = _handle(tiny_config, Fusion=BrokenFusion)
    with pytest.raises(StageUnavailable) as info:
        handle.search.remote({"query": "price_of"}).result()
    assert kind_of(info.value).http_status == 503 and describe(info.value).body()["stage"] == "Fusion"


def test_bad_requests_map_to_400_and_404(tiny_config):
    handle = _handle(tiny_config)
    with pytest.raises(QueryError) as bad:
        handle.search.remote({"query": "   "}).result()
    assert kind_of(bad.value).http_status == 400
    with pytest.raises(UnknownRepoError) as unknown:
        handle.search.remote({"query": "cart", "repos": ["nobody/nothing"]}).result()
    assert kind_of(unknown.value).http_status == 404 and "nobody/nothing" in describe(unknown.value).body()["message"]
    assert kind_of(RuntimeError("x")).http_status == 500


def test_feedback_log_appends_jsonl(tmp_path):
    log = FeedbackLog(str(tmp_path / "fb"))
    first = log.append({"query": "q", "chunk_ids": ["a"]})
    second = log.append({"query": "q2", "chunk_ids": ["b", "c"]})
    assert first == second
    records = [json.loads(line) for line in first.read_text().splitlines()]
    assert [r["chunk_ids"] for r in records] == [["a"], ["b", "c"]] and all(r["id"] and r["ts"] for r in records)


def test_serve_yaml_configures_every_deployment_with_fractional_cpus():
    options = deployment_options(None)
    assert set(options) == {"Ingress", *stage_deployments(load_config(None))}
    assert all(o["ray_actor_options"]["num_cpus"] <= 0.1 for o in options.values())

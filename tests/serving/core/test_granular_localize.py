"""Granular (whole-file, function) BM25 shards: the indexer writes them for a real repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import make_config

R = "acme/shop"


SHOP = {
    "shop/billing.py": "def invoice_total(lines):\n    return sum(line.amount for line in lines)\n\n\n"
                       "def refund_invoice(invoice):\n    return -invoice_total(invoice.lines)\n",
    "shop/shipping.py": "def parcel_weight(parcel):\n    return parcel.grams / 1000\n\n\n"
                        "def courier_for(parcel):\n    return 'fast' if parcel_weight(parcel) < 2 else 'slow'\n",
    "shop/tests/test_shipping.py": "from shop.shipping import courier_for\n\n\n"
                                   "def test_courier():\n    assert courier_for(None)\n",
}


@pytest.fixture(scope="module")
def shop_repo(tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("shop")
    for path, text in SHOP.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "shop"], check=True)
    return repo


def test_indexer_writes_whole_file_and_function_shards(shop_repo, tmp_path):
    from pipelines.indexer import Indexer
    from semantica.layout import IndexLayout

    config = make_config(tmp_path)
    Indexer(config, progress=False).index(str(shop_repo), R, "HEAD")
    manifest = IndexLayout(config.paths.index_root).current(R).read_manifest()
    kinds = {s.kind: s.count for s in manifest.shards}
    assert kinds["lucene_file"] == 3 and kinds["lucene_function"] == 5
    assert manifest.counts["lucene_function_docs"] == 5

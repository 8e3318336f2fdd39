"""Granular (whole-file, function) BM25 in localization: the fusion rule, and a real indexed repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from semantica.config import GranularConfig
from serving.core.granular_fusion import GranularFusion, GranularLists, localizer_key
from tests.conftest import make_config

R = "acme/shop"


def key(path: str) -> str:
    return localizer_key(R, path)


def test_file_list_adds_reciprocal_rank_in_fused_units():
    fusion = GranularFusion(GranularConfig(enabled=True, file_weight=0.6, rrf_k=60))
    fused = {key("a.py"): 0.010, key("b.py"): 0.009}
    lists = GranularLists(files=[(key("b.py"), 1), (key("c.py"), 2)])
    out = fusion.files(fused, lists)
    assert out[key("a.py")] == pytest.approx(0.010)
    assert out[key("b.py")] == pytest.approx(0.009 + 0.6 / 61)
    assert out[key("c.py")] == pytest.approx(0.6 / 62)  # a file only whole-file BM25 found now competes
    assert fusion.files(fused, GranularLists()) == fused


def test_zero_weights_change_nothing():
    fusion = GranularFusion(GranularConfig(enabled=True))
    fused = {key("a.py::f"): 0.5}
    lists = GranularLists(functions=[(key("b.py::g"), 1)], functions_of=lambda f: [key("b.py::h")])
    assert fusion.functions(fused, lists, [key("b.py")]) == fused


def test_functions_of_top_files_become_candidates_with_a_file_prior():
    config = GranularConfig(enabled=True, function_weight=1.0, candidate_files=1, file_prior_weight=2.0, rrf_k=10)
    inventory = {key("top.py"): [key("top.py::one"), key("top.py::two")], key("next.py"): [key("next.py::three")]}
    lists = GranularLists(functions=[(key("next.py::three"), 1)], functions_of=lambda f: inventory.get(f, []))
    out = GranularFusion(config).functions({key("top.py::one"): 0.05}, lists, [key("top.py"), key("next.py")])
    assert out[key("top.py::one")] == pytest.approx(0.05 + 2.0 / 11)
    assert out[key("top.py::two")] == pytest.approx(2.0 / 11)      # candidate from the top file
    assert out[key("next.py::three")] == pytest.approx(1.0 / 11 + 2.0 / 12)  # BM25 hit, second file's prior
    assert set(out) == {key("top.py::one"), key("top.py::two"), key("next.py::three")}


def test_bad_rrf_k_is_refused():
    with pytest.raises(ValueError, match="granular.rrf_k"):
        GranularFusion(GranularConfig(rrf_k=0))


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


def _search(config, query: str):
    from serving.pipeline import SearchPipeline, SearchRequest

    return SearchPipeline(config).search(SearchRequest(query=query, k=5))


def test_indexed_snapshot_serves_granular_lists(shop_repo, tmp_path):
    from pipelines.indexer import Indexer
    from semantica.layout import IndexLayout

    config = make_config(tmp_path, "granular.enabled=true", "granular.file_weight=1.0",
                         "granular.function_weight=1.0", "granular.candidate_files=2", "granular.file_prior_weight=0.5")
    Indexer(config, progress=False).index(str(shop_repo), R, "HEAD")
    manifest = IndexLayout(config.paths.index_root).current(R).read_manifest()
    kinds = {s.kind: s.count for s in manifest.shards}
    assert kinds["lucene_file"] == 3 and kinds["lucene_function"] == 5
    assert manifest.counts["lucene_function_docs"] == 5
    response = _search(config, "which courier ships a heavy parcel")
    assert not response.degraded and "granular" in response.timings_ms
    assert response.files[0]["path"] == "shop/shipping.py"
    functions = [f["function"] for f in response.functions]
    assert functions[0] in {"shop/shipping.py::courier_for", "shop/shipping.py::parcel_weight"}
    assert "shop/billing.py::refund_invoice" in functions  # a candidate of a top file, though no chunk list had it


def test_snapshot_without_granular_shards_falls_back_to_chunk_lists(shop_repo, tmp_path):
    from pipelines.indexer import Indexer

    config = make_config(tmp_path, "granular.index=false", "granular.enabled=true", "granular.file_weight=1.0")
    Indexer(config, progress=False).index(str(shop_repo), R, "HEAD")
    response = _search(config, "which courier ships a heavy parcel")
    assert not response.degraded
    assert response.files and response.files[0]["path"] == "shop/shipping.py"

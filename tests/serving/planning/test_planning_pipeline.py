"""The planner inside the real pipeline: two small git repositories indexed for real (tree-sitter, MiniLM,
FAISS, Lucene), queried with planning on; `plan` says what was decided and the hits follow it."""

from __future__ import annotations

import dataclasses

import pytest

from semantica.api import QueryError, SearchRequest
from semantica.config import ConfigError, load_config
from serving.api.http.models import SearchBody
from serving.pipeline import SearchPipeline
from tests.conftest import make_config
from tests.dated_git import one_commit_repo

pytestmark = pytest.mark.timeout(600)

SHOP = {
    "shop/__init__.py": "",
    "shop/prices.py": 'PRICES = {"apple": 3, "pear": 4}\n\n\ndef price_of(sku):\n    """Unit price of a sku."""\n'
                      '    return PRICES[sku]\n',
    "shop/cart.py": 'from shop.prices import price_of\n\n\nclass Cart:\n    """A shopping cart."""\n\n'
                    '    def __init__(self):\n        self.items = []\n\n    def add(self, sku, qty):\n'
                    '        self.items.append((sku, qty))\n\n    def total(self):\n'
                    '        return sum(price_of(s) * q for s, q in self.items)\n',
    "shop/checkout.py": 'from shop.cart import Cart\n\n\ndef checkout(cart: Cart):\n    """Charge the cart total."""\n'
                        '    return {"charged": cart.total()}\n',
}
BANK = {
    "bank/__init__.py": "",
    "bank/interest.py": 'def compound_interest(principal, rate, years):\n    """Interest compounded yearly."""\n'
                        '    return principal * (1 + rate) ** years\n',
    "bank/ledger.py": 'def post_entry(ledger, account, amount):\n    """Append one entry to the ledger."""\n'
                      '    ledger.append((account, amount))\n\n\ndef reconcile_ledger(ledger):\n'
                      '    return sum(amount for _, amount in ledger)\n',
    "bank/shared.py": 'def price_of(sku):\n    """Unit price of a sku."""\n    return PRICES[sku]\n',
}


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    from pipelines.indexer import Indexer

    root = tmp_path_factory.mktemp("planning")
    config = make_config(root, "planning.enabled=true", "freshness.enabled=false", "token_vectors.enabled=false",
                         "late_interaction.enabled=false")  # the planner is under test, not the rerankers
    indexer = Indexer(config, progress=False)
    for name, files in (("t/shop", SHOP), ("t/bank", BANK)):
        indexer.index(str(one_commit_repo(root / name.split("/")[1], files)), name)
    return config


@pytest.fixture(scope="module")
def pipeline(config) -> SearchPipeline:
    return SearchPipeline(config)


def _with(config, **planning):
    return dataclasses.replace(config, planning=dataclasses.replace(config.planning, **planning))


def test_mode_per_query_class_and_its_weights_reach_fusion(pipeline):
    cases = {"price_of": "exact_vector", "where is `cart.total()` computed": "exact_vector",
             'Traceback:\n  File "shop/cart.py", line 14, in total\nKeyError: kiwi': "lexical_heavy",
             "cart checkout total": "lexical_heavy", "show all examples of ledger entries": "mmr_diverse",
             "how much does a customer pay for everything in the basket": "vector_heavy"}
    for query, mode in cases.items():
        response = pipeline.search(SearchRequest(query=query, repos=["t/shop"], k=5, explain=True))
        assert response.plan["mode"] == mode, (query, response.plan["why"])
    hybrid = pipeline.search(SearchRequest(query="cart total", repos=["t/shop"], k=3, explain=True, mode="hybrid"))
    lexical = pipeline.search(SearchRequest(query="cart total", repos=["t/shop"], k=3, explain=True,
                                            mode="lexical_heavy"))
    weight_lexical = 9  # features: 4 ranks, 4 rrf, then the 4 normalised weights (vector, lexical, ...)
    assert lexical.hits[0].features[weight_lexical] > hybrid.hits[0].features[weight_lexical]


def test_modes_weigh_chunk_fusion_only_not_localization(pipeline):
    """The mode multipliers on files and functions lost under leave-one-repository-out and left (issue 45)."""
    answers = [pipeline.search(SearchRequest(query="cart total price", repos=["t/shop"], k=5, mode=mode))
               for mode in ("hybrid", "lexical_heavy", "vector_heavy")]
    assert answers[0].files and all(a.files == answers[0].files and a.functions == answers[0].functions
                                    for a in answers)
    with pytest.raises(ConfigError, match=r"planning\.modes: unknown key\(s\) \['apply_to_localize'\]"):
        load_config(None, ["planning.modes.apply_to_localize=true"])


def test_no_plan_without_planning(config):
    off = SearchPipeline(_with(config, enabled=False)).search(SearchRequest(query="price_of", repos=["t/shop"]))
    assert off.plan is None and len(off.hits) == min(config.query.default_k, len(off.hits)) and len(off.hits) > 3

def test_a_multi_repository_query_is_fused_without_budgets(pipeline):
    """Budgets across repositories were neutral on the golden set and left the product (issue 45)."""
    response = pipeline.search(SearchRequest(query="price of a sku", repos=["t/bank", "t/shop"], k=5))
    assert "budgets" not in response.plan and {h.repo for h in response.hits} == {"t/bank", "t/shop"}
    with pytest.raises(ConfigError, match=r"planning: unknown key\(s\) \['budgets'\]"):
        load_config(None, ["planning.budgets.enabled=true"])
    assert "primary_repo" not in SearchBody.model_fields


def test_mmr_diverse_reorders_with_stored_vectors(pipeline):
    plain = pipeline.search(SearchRequest(query="ledger entries", repos=["t/bank"], k=4, mode="hybrid"))
    diverse = pipeline.search(SearchRequest(query="ledger entries", repos=["t/bank"], k=4, mode="mmr_diverse"))
    assert diverse.plan["mmr"]["vectors"] >= 2
    selected = pipeline.search(SearchRequest(query="show all examples of ledger entries", repos=["t/bank"], k=4))
    assert selected.plan["mode"] == "mmr_diverse" and selected.plan["mmr"] is None  # chosen, not forced: no MMR
    with pytest.raises(ConfigError, match=r"planning\.modes: unknown key\(s\) \['mmr_enabled'\]"):
        load_config(None, ["planning.modes.mmr_enabled=true"])
    assert {h.chunk_id for h in diverse.hits} <= {h.chunk_id for h in plain.hits} | {h.chunk_id for h in diverse.hits}


def test_a_bad_mode_is_a_query_error(pipeline):
    with pytest.raises(QueryError, match="hybrid, vector_heavy, lexical_heavy, mmr_diverse, exact_vector"):
        pipeline.search(SearchRequest(query="cart", mode="fastest"))


def test_mode_is_in_the_http_body_and_the_cache_key():
    assert "mode" in SearchBody.model_fields
    with pytest.raises(ValueError, match="known searchmodes|hybrid"):
        SearchBody.model_validate({"query": "x", "mode": "fastest"})
    assert SearchRequest("x", mode="hybrid").cache_key(()) != SearchRequest("x", mode="mmr_diverse").cache_key(())


DNA_QUERY = ("fix the primer search: CCAGCTACTCGGGAGGCTGAGGCTGGAGGATCGCTTGAGTCCAGGAG[ATCG]{2}C never matches "
             "in price_of")
PATHOLOGICAL_MAX_CPU_S = 1.0
"""CPU seconds (the process's, every thread's), which a loaded machine does not inflate as it does wall time:
the backtracking analyzer held this query for over 17 minutes."""


@pytest.mark.parametrize("query", [
    DNA_QUERY,
    "A" * 19_000 + "[",
    ("DEADBEEF0123_ABC.d::E:" * 900)[:19_999] + "!",
])
def test_a_pathological_query_answers_within_the_bound(pipeline, query):
    """Runs of capitals, hex digits, dots and colons ending in punctuation, up to the string limit, in one query
    through every planning stage; the old identifier pattern backtracked exponentially on them."""
    import time

    pipeline.search(SearchRequest("price of a sku", k=5))  # warm: models and tables load once, not per query
    cpu = time.process_time()
    response = pipeline.search(SearchRequest(query, k=5))
    assert response.plan is not None
    assert time.process_time() - cpu < PATHOLOGICAL_MAX_CPU_S

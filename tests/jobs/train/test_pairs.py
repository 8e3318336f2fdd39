"""`semantica mine-pairs`: the benchmark guard, docstring and commit pairs from a real git history."""

from __future__ import annotations

import subprocess
from pathlib import Path

import polars as pl
import pytest

from jobs.benchmark_repos import DEV_SPLIT_REPOS
from jobs.train.pairs import PairMiner, PairsError, check_corpus, load_pairs
from jobs.train.pairs_source import function_spans
from semantica.config import PairsConfig, load_config, load_train_config
from tests.dated_git import commit

# Listed here on purpose: weakening the constant in jobs/benchmark_repos.py must not weaken this guard.
SWE_BENCH_DEV_REPOS = {"psf/requests", "pallets/flask", "pytest-dev/pytest", "sphinx-doc/sphinx", "sympy/sympy"}


def test_shipped_corpus_never_contains_a_benchmark_repository():
    corpus = load_train_config(None, [], environ={}).pairs.corpus
    assert corpus, "the default corpus is empty"
    normalised = {r.lower().removesuffix(".git") for r in corpus}
    assert not normalised & SWE_BENCH_DEV_REPOS
    assert SWE_BENCH_DEV_REPOS <= DEV_SPLIT_REPOS
    assert check_corpus(corpus) == corpus


@pytest.mark.parametrize("repo", ["psf/requests", "Sympy/SymPy", "pallets/flask.git", " sphinx-doc/sphinx"])
def test_benchmark_repositories_are_refused(repo, tmp_path):
    with pytest.raises(PairsError, match="must not be mined"):
        check_corpus(["pallets/click", repo])
    config = load_config(None, [], environ={})
    with pytest.raises(PairsError, match="must not be mined"):
        PairMiner(config, PairsConfig(), tmp_path / "out", progress=False).run(tmp_path, [repo])


def test_function_spans_split_docstrings_and_fold_nested_functions():
    text = ('class Cart:\n    def total(self):\n        """Sum the items of the cart."""\n'
            '        def price(item):\n            return item.price\n        return sum(map(price, self.items))\n')
    (span,) = function_spans(text)
    assert span.qualname == "Cart.total" and span.docstring == "Sum the items of the cart."
    body = span.body(text.split("\n"))
    assert "Sum the items" not in body and "def price(item)" in body and body.startswith("    def total(self):")
    assert function_spans("def broken(:\n") == []


CART_V1 = ('def cart_total(items):\n    """Return the total price of all items, rounded to cents."""\n'
           '    total = sum(item.price for item in items)\n    return round(total, 2)\n\n\n'
           'def cart_count(items):\n    return len(items)\n')


@pytest.fixture(scope="module")
def shop(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pairs")
    work = root / "work"
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    commit(work, {"shop/cart.py": CART_V1, "README.md": "# shop\n"}, "Initial shop", day=0)
    commit(work, {"shop/cart.py": CART_V1.replace("round(total, 2)", "float(Decimal(total).quantize(CENTS))")},
           "Round cart totals half up\n\nFloats rounded badly.\n\nFixes #12\nSigned-off-by: Dev <d@e.x>", day=1)
    commit(work, {"shop/cart.py": CART_V1.replace("len(items)", "len(list(items))")}, "Bump version", day=2)
    commit(work, {"shop/cart.py": CART_V1 + "\n# pinned\n"}, "Update pinned dependencies for the test suite", day=3,
           author="pre-commit-ci[bot] <bot@example.com>")
    bare = root / "repos" / "acme+shop" / "repo"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    return root / "repos"


def test_mined_pairs_have_provenance_and_skip_bots_and_trivia(shop, tmp_path):
    config, pairs = load_config(None, [], environ={}), load_train_config(None, ["pairs.hard_negatives=1"], environ={}).pairs
    result = PairMiner(config, pairs, tmp_path / "out", progress=False, log=lambda _m: None).run(shop, ["acme/shop"])
    assert result == {"acme/shop": {"docstring": 1, "commit": 1}}
    frame = load_pairs(tmp_path / "out")
    doc = frame.filter(pl.col("kind") == "docstring").row(0, named=True)
    assert doc["query"] == "Return the total price of all items, rounded to cents."
    assert doc["positive_keys"] == ["shop/cart.py::cart_total"] and "Return the total" not in doc["positive_documents"][0]
    assert doc["negative_keys"] == ["shop/cart.py::cart_count"]  # BM25 neighbour, never the positive
    fix = frame.filter(pl.col("kind") == "commit").row(0, named=True)
    assert fix["query"].startswith("Round cart totals half up") and "Signed-off-by" not in fix["query"]
    assert fix["issue_refs"] == ["12"]
    assert fix["positive_keys"] == ["shop/cart.py", "shop/cart.py::cart_total"]
    assert "round(total, 2)" in fix["positive_documents"][0]  # the code at the parent commit
    assert fix["negative_keys"] == ["shop/cart.py::cart_count"]  # the changed file's unchanged function
    assert fix["negative_documents"] == ["def cart_count(items):\n    return len(items)"]
    parent = subprocess.run(["git", "-C", str(shop / "acme+shop" / "repo"), "rev-parse", f"{fix['commit']}^"],
                            check=True, capture_output=True, text=True).stdout.strip()
    assert fix["parent"] == parent
    again = PairMiner(config, pairs, tmp_path / "out", progress=False, log=lambda _m: None).run(shop, ["acme/shop"])
    assert again == {"acme/shop": {"docstring": 0, "commit": 0}}  # resumed: parts already written
    assert load_pairs(tmp_path / "out").height == frame.height


def test_pairs_are_deduplicated_across_repositories_and_runs(shop, tmp_path):
    config = load_config(None, [], environ={})
    pairs = load_train_config(None, ["pairs.hard_negatives=0", "pairs.commit_batch=1"], environ={}).pairs
    path = str(shop / "acme+shop" / "repo")
    miner = PairMiner(config, pairs, tmp_path / "out", progress=False, log=lambda _m: None)
    assert miner.mine_repo(path, "acme/shop") == {"docstring": 1, "commit": 1}
    frame = load_pairs(tmp_path / "out")
    assert frame["dedup_key"].n_unique() == frame.height == 2
    # a fork (same code, same messages) adds nothing, in this run or in a later one
    assert miner.mine_repo(path, "acme/shop-fork") == {"docstring": 0, "commit": 0}
    later = PairMiner(config, pairs, tmp_path / "out", progress=False, log=lambda _m: None)
    assert len(later.seen) == 2 and later.mine_repo(path, "other/fork") == {"docstring": 0, "commit": 0}


def test_in_file_negatives_rank_the_unchanged_functions_by_the_message(tmp_path):
    miner = PairMiner(load_config(None, [], environ={}), load_train_config(None, ["pairs.commit_negatives=2"], environ={}).pairs,
                      tmp_path / "out", progress=False)
    text = ("def parse_header(raw):\n    return raw.split(':')\n\n\ndef send_body(sock, body):\n    sock.send(body)\n\n\n"
            "def close_socket(sock):\n    sock.close()\n\n\ndef parse_cookie(raw):\n    return raw.split(';')\n")
    at_parent = {"http.py": (text.split("\n"), function_spans(text))}
    keys, documents = miner.in_file_negatives("Fix parse of a cookie with raw spaces", at_parent,
                                              {"http.py", "http.py::parse_header"})
    # the one sharing words first; the rest (no shared word) in file order; the positive never
    assert keys == ["http.py::parse_cookie", "http.py::send_body"] and len(documents) == 2
    assert documents[0].startswith("def parse_cookie(raw):")

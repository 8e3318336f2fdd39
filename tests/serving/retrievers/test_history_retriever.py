"""History end to end: indexed into a real snapshot at an earlier commit, served by the pipeline, explained.
A later commit whose message gives the answer away never reaches votes, lists or explanations."""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import make_config
from tests.dated_git import commit

R = "acme/shop"
BILLING = ("def invoice_total(lines):\n    return sum(line.amount for line in lines)\n\n\n"
           "def refund_invoice(invoice):\n    return -invoice_total(invoice.lines)\n")
SHIPPING = ("def parcel_weight(parcel):\n    return parcel.grams / 1000\n\n\n"
            "def courier_for(parcel):\n    return 'fast' if parcel_weight(parcel) < 2 else 'slow'\n")





@pytest.fixture(scope="module")
def shop(tmp_path_factory) -> dict[str, object]:
    repo = tmp_path_factory.mktemp("shop-history")
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    commit(repo, {"shop/billing.py": BILLING, "shop/shipping.py": SHIPPING}, "Start the shop package", 0)
    fix = commit(repo, {"shop/billing.py": BILLING.replace("return -invoice_total(invoice.lines)",
                                                            "return -abs(invoice_total(invoice.lines))")},
                  "Fix refund of discounted invoices going positive", 5)
    snapshot = commit(repo, {"shop/shipping.py": SHIPPING.replace("/ 1000", "/ 1000.0")},
                       "Use float division for parcel weights", 9)
    later = commit(repo, {"shop/shipping.py": SHIPPING.replace("< 2", "< 3")},
                    "Fix zebra quokka courier threshold", 12)
    return {"repo": repo, "fix": fix, "snapshot": snapshot, "later": later}


@pytest.fixture(scope="module")
def indexed(shop, tmp_path_factory):
    from pipelines.indexer import Indexer

    config = make_config(tmp_path_factory.mktemp("shop-history-index"), "history.index=true",
                         "history.min_message_chars=5")
    summary = Indexer(config, progress=False).index(str(shop["repo"]), R, shop["snapshot"])
    return config, summary


def _search(config, query: str, explain: bool = False):
    from serving.pipeline import SearchPipeline, SearchRequest

    return SearchPipeline(config).search(SearchRequest(query=query, k=5, explain=explain))


def test_snapshot_stores_history_up_to_its_commit_only(indexed, shop):
    from semantica.layout import IndexLayout
    from semantica.stores.history import load_history

    config, summary = indexed
    paths = IndexLayout(config.paths.index_root).current(R)
    assert paths.read_manifest().counts["history_commits"] == 2  # the root commit is dropped
    stored = load_history(paths.history)
    assert stored.commit == shop["snapshot"]
    assert shop["later"] not in {r.sha for r in stored.records}
    assert "history" in summary.seconds


def test_votes_reach_files_and_explanations(indexed, shop):
    config, _ = indexed
    response = _search(config, "refund of a discounted invoice is positive", explain=True)
    assert not response.degraded and "history" in response.timings_ms
    assert response.files[0]["path"] == "shop/billing.py"
    assert [v["sha"] for v in response.files[0]["history"]] == [shop["fix"]]
    assert response.files[0]["history"][0]["subject"] == "Fix refund of discounted invoices going positive"
    assert not any(f.get("history") for f in response.functions)  # votes are files-only: a hit names its file's
    assert any(shop["fix"][:10] in (h.explanation or "") for h in response.hits if h.symbol == "refund_invoice")


def test_later_commit_gives_nothing_away(indexed, shop):
    config, _ = indexed
    response = _search(config, "zebra quokka courier threshold", explain=True)
    voters = [v["sha"] for f in response.files + response.functions for v in f.get("history", [])]
    assert shop["later"] not in voters
    assert all(shop["later"][:10] not in (h.explanation or "") for h in response.hits)


def test_history_retriever_is_registered_and_returns_chunks(indexed):
    from semantica.snapshot import SnapshotSet
    from serving.retrievers.repo import RepoRetrievers

    config, _ = indexed
    snapshot = SnapshotSet(config).get(R)
    retriever = RepoRetrievers(snapshot, lambda: None).get("history")
    found = retriever.search("refund discounted invoices", 5)
    assert found and snapshot.chunk_by_id[found[0][0]].path == "shop/billing.py"  # the voted file's first chunk
    assert retriever.search("zebra quokka", 5) == []


def test_mcp_file_answers_carry_the_voters(indexed, shop):
    from serving.api.mcp.models import FileOut

    config, _ = indexed
    top = _search(config, "refund of a discounted invoice is positive", explain=True).files[0]
    assert FileOut(**top).history[0]["sha"] == shop["fix"]


def test_a_snapshot_stored_with_function_rows_answers_files_only(indexed, shop, tmp_path):
    """A snapshot whose history table was written while history also read functions (function rows voting for
    `refund_invoice`) answers as a files-only one: the voted file's first chunk, voters on files only."""
    import dataclasses
    import shutil

    from semantica.layout import IndexLayout
    from semantica.snapshot import SnapshotSet
    from serving.retrievers.repo import RepoRetrievers
    from tests.old_history_table import rewrite_with_functions

    config, _ = indexed
    old = dataclasses.replace(config, paths=dataclasses.replace(config.paths, index_root=str(tmp_path / "index")))
    shutil.copytree(config.paths.index_root, old.paths.index_root, symlinks=True)
    rewrite_with_functions(IndexLayout(old.paths.index_root).current(R).history,
                           {"shop/billing.py": ["shop/billing.py::refund_invoice"]})

    snapshot = SnapshotSet(old).get(R)
    found = RepoRetrievers(snapshot, lambda: None).get("history").search("refund discounted invoices", 5)
    first = min((c for c in snapshot.chunks if c.path == "shop/billing.py"), key=lambda c: c.start_line)
    assert [chunk_id for chunk_id, _ in found] == [first.chunk_id]
    query = "refund of a discounted invoice is positive"
    answer, before = _search(old, query, explain=True), _search(config, query, explain=True)
    assert [(f["path"], f.get("history")) for f in answer.files] == [(f["path"], f.get("history")) for f in before.files]
    assert not any(f.get("history") for f in answer.functions)

"""Whole-file and function-level Lucene documents: built from real parses, written and searched for real."""

from __future__ import annotations

from pipelines.granular import GranularIndexWriter, file_texts_from_chunks, snapshot_documents
from pipelines.parse import FileParser
from pipelines.source_files import SourceFile
from semantica.config import Config
from semantica.stores.granular import Granularity
from semantica.stores.lucene import LuceneShardSearcher

BILLING = '''"""Billing of shop orders."""

import math


def invoice_total(lines):
    """Sum the invoice lines, rounding half up."""

    def rounded(value):
        return math.floor(value + 0.5)

    return sum(rounded(line.amount) for line in lines)


class Ledger:
    """Keeps entries."""

    def record(self, entry):
        self.entries.append(entry)

    def refund(self, entry):
        return -entry.amount
'''
SHIPPING = '''def parcel_weight(parcel):
    return parcel.grams / 1000


def courier_for(parcel):
    return "fast" if parcel_weight(parcel) < 2 else "slow"
'''
FILES = {"shop/billing.py": BILLING, "shop/shipping.py": SHIPPING}


def _parsed():
    parser = FileParser(Config().chunk)
    parsed = [parser.parse("shop", SourceFile(path, f"sha-{path}", "python", text)) for path, text in FILES.items()]
    return [c for p in parsed for c in p.chunks], [s for p in parsed for s in p.symbols]


def test_file_texts_are_rebuilt_from_chunks():
    chunks, _ = _parsed()
    texts = file_texts_from_chunks(chunks)
    assert {path: text.rstrip("\n") for path, text in texts.items()} == {
        path: text.rstrip("\n") for path, text in FILES.items()}


def test_function_documents_fold_nested_functions_into_their_holder():
    chunks, symbols = _parsed()
    docs = {d.file[0].doc_id: d for d in snapshot_documents(chunks, symbols)}
    assert set(docs) == set(FILES)
    billing = {d.doc_id: d for d in docs["shop/billing.py"].functions}
    assert set(billing) == {"shop/billing.py::invoice_total", "shop/billing.py::Ledger.record",
                            "shop/billing.py::Ledger.refund"}  # `rounded` is inside invoice_total
    assert "def rounded(value)" in billing["shop/billing.py::invoice_total"].text
    assert billing["shop/billing.py::Ledger.refund"].text.strip() == "def refund(self, entry):\n        return -entry.amount"


def test_written_shards_answer_at_both_granularities(tmp_path):
    chunks, symbols = _parsed()
    config = Config()
    shards = GranularIndexWriter(config.lucene).write_documents(tmp_path, snapshot_documents(chunks, symbols))
    assert {(s.kind, s.count) for s in shards} == {("lucene_file", 2), ("lucene_function", 5)}
    assert all(not (tmp_path / s.path / "write.lock").exists() for s in shards)
    by_kind = {s.kind: LuceneShardSearcher(tmp_path / s.path, config.lucene) for s in shards}
    files = by_kind[Granularity.FILE.shard_kind].search("the courier picks a parcel by its weight", 5)
    assert files[0][0] == "shop/shipping.py"
    functions = by_kind[Granularity.FUNCTION.shard_kind].search("refund an entry of the ledger", 5)
    assert functions[0][0] == "shop/billing.py::Ledger.refund"
    # identifier parts match (rounded -> invoice_total's body), and a query of nothing gives nothing
    assert by_kind[Granularity.FUNCTION.shard_kind].search("rounding floor", 5)[0][0] == "shop/billing.py::invoice_total"
    assert by_kind[Granularity.FILE.shard_kind].search("", 5) == []


def test_empty_snapshot_writes_no_granular_shard(tmp_path):
    assert GranularIndexWriter(Config().lucene).write_documents(tmp_path, snapshot_documents([], [])) == []


def test_query_repeats_weigh_what_an_issue_repeats(tmp_path):
    chunks, symbols = _parsed()
    config = Config()
    shards = GranularIndexWriter(config.lucene).write_documents(tmp_path, snapshot_documents(chunks, symbols))
    (file_shard,) = [s for s in shards if s.kind == Granularity.FILE.shard_kind]
    searcher = LuceneShardSearcher(tmp_path / file_shard.path, config.lucene)
    assert searcher.sanitise("parcel parcel ledger") == "parcel ledger"
    assert searcher.sanitise("parcel parcel ledger", keep_repeats=True) == "parcel parcel ledger"
    query = "the ledger: parcel parcel parcel parcel"
    assert searcher.search(query, 2, keep_repeats=True)[0][0] == "shop/shipping.py"
    repeated = dict(searcher.search(query, 2, keep_repeats=True))
    once = dict(searcher.search(query, 2))
    assert repeated["shop/shipping.py"] > once["shop/shipping.py"]

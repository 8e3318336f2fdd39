"""`encoder_eval` reading a long query as several windows (`--query-reading N:POOLING`), as the dense
channel can: one window is the plain measure, the pooled similarities are each window's max or mean, a document that
only the end of a query describes is found, and `--min-query-tokens` keeps only the queries that reach past one
window against the whole pool."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import torch

from jobs.train.pairs import PAIR_SCHEMA, Pair
from lab.train.encoder_eval import PooledEncoder, QueryReading, RetrievalTask, long_queries, main
from semantica.config import load_train_config
from semantica.runtime.encoder import FastTokenizer, resolve_model_path

MINILM = resolve_model_path("")
FILLER = " ".join(["The page shows the basket and the customer reviews it before paying."] * 6)
LONG = f"Cart total is wrong with two discount codes\n\n{FILLER}\n\nThe VAT rate table has no entry for the country code."
DOCUMENTS = ["def vat(amount, country):\n    return amount * RATES[country]",
             "def send_email(to, body):\n    smtp.send(to, body)",
             "def parse_date(text):\n    return datetime.strptime(text, '%Y-%m-%d')"]
TASK = RetrievalTask("acme/shop", "commit", [LONG, "send the email"], DOCUMENTS, [frozenset({0}), frozenset({1})])


@pytest.fixture(scope="module")
def encoder() -> PooledEncoder:
    return PooledEncoder(str(MINILM), load_train_config(None, []).train_encoder, 8)


def test_one_window_is_the_plain_measure(encoder: PooledEncoder) -> None:
    documents = encoder.encode(DOCUMENTS, 256)
    plain = encoder.encode(TASK.queries, 64) @ documents.T
    assert torch.equal(encoder.similarities(TASK.queries, documents, QueryReading()), plain)


def test_windows_pool_each_query_by_max_or_mean(encoder: PooledEncoder) -> None:
    documents = encoder.encode(DOCUMENTS, 256)
    windows = FastTokenizer(MINILM).windows(LONG, 64, 4)
    assert len(windows) == 2
    per_window = encoder.encode(windows, 64) @ documents.T
    by_max = encoder.similarities([LONG, "send the email"], documents, QueryReading(4, "max"))
    by_mean = encoder.similarities([LONG, "send the email"], documents, QueryReading(4, "mean"))
    assert torch.allclose(by_max[0], per_window.max(dim=0).values, atol=1e-5)
    assert torch.allclose(by_mean[0], per_window.mean(dim=0), atol=1e-5)
    assert torch.allclose(by_max[1], by_mean[1], atol=1e-5)  # a one-window query pools to itself
    first = encoder.similarities([LONG], documents, QueryReading())[0]
    assert by_max[0, 0] > first[0] + 0.1  # the VAT sentence lies past the first window


def test_long_queries_keep_the_pool_and_drop_short_queries() -> None:
    kept = long_queries(TASK, FastTokenizer(MINILM), 64)
    assert kept.queries == [LONG] and kept.relevant == [frozenset({0})] and kept.documents == DOCUMENTS


def write_pairs(out: Path) -> Path:
    """TASK's queries as commit pairs in `mine-pairs` layout, the date parser as each one's negative."""
    rows = []
    for query, positive in zip(TASK.queries, (DOCUMENTS[0], DOCUMENTS[1])):
        pair = Pair("commit", "acme/shop", "c0ffee", "", "shop/util.py", "", query, ["shop/util.py::f"], [positive],
                    ["shop/util.py::parse_date"], [DOCUMENTS[2]])
        rows.append({**pair.__dict__, "dedup_key": pair.dedup_key()})
    (out / "acme+shop").mkdir(parents=True)
    pl.DataFrame(rows, schema=PAIR_SCHEMA).write_parquet(out / "acme+shop" / "commits-0000.parquet")
    return out


def test_the_cli_measures_long_queries_once_per_reading_and_records_them(tmp_path) -> None:
    pairs, out = write_pairs(tmp_path / "pairs"), tmp_path / "eval.json"
    common = ["--pairs", str(pairs), "--repo", "acme/shop", "--kind", "commit", "--model", "minilm=", "--out", str(out)]
    assert main([*common, "--query-reading", "1", "--query-reading", "3:max", "--min-query-tokens", "64"]) == 0
    report = json.loads(out.read_text())
    assert report["query_readings"] == ["1:max", "3:max"] and report["min_query_tokens"] == 64
    (first,) = report["models"]["minilm@1:max"]["per_repo"]
    (windows,) = report["models"]["minilm@3:max"]["per_repo"]
    assert (windows["queries"], windows["documents"], windows["acc_at_1"]) == (1, 3, 1.0)
    assert first["queries"] == 1
    assert main(common) == 0 and list(json.loads(out.read_text())["models"]) == ["minilm"]  # one reading: as before
    for bad in ("0", "2:sum"):
        with pytest.raises(SystemExit):
            main([*common, "--query-reading", bad])

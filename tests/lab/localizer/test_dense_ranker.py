"""The dense ranker study's head rows: each head function's place, its cosine and the cosine's rank within the
head; rows outside the head or without a vector stay empty (NaN), never zero."""

from __future__ import annotations

import math

import polars as pl

from lab.localizer.dense_ranker import head_rows


def test_head_rows_carry_place_cosine_and_cosine_rank():
    sample = pl.DataFrame({"qid": [7, 7, 7, 7], "key": ["a.py::f", "a.py::g", "tests/test_a.py::t", "b.py::h"],
                           "label": [0, 1, 0, 0], "shipped": [4.0, 3.0, 2.0, 1.0], "repo": ["acme/shop"] * 4})
    heads = {7: ["a.py::f", "a.py::g", "tests/test_a.py::t"]}  # b.py::h is below the head
    cosines = {7: {"a.py::f": 0.1, "a.py::g": 0.9}}  # the test function has no vector
    rows = {r["key"]: r for r in head_rows(sample, heads, cosines).iter_rows(named=True)}
    assert [rows[k]["head_rank"] for k in heads[7]] == [1.0, 2.0, 3.0]
    assert rows["a.py::g"]["cosine_rank"] == 1.0 and rows["a.py::f"]["cosine_rank"] == 2.0
    assert math.isclose(rows["a.py::g"]["cosine"], 0.9, rel_tol=1e-6)
    assert math.isnan(rows["tests/test_a.py::t"]["cosine"]) and math.isnan(rows["tests/test_a.py::t"]["cosine_rank"])
    assert rows["b.py::h"]["head_rank"] is None  # outside the head: the shipped order keeps it
    assert len(rows) == 4 and rows["a.py::g"]["label"] == 1

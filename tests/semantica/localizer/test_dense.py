"""`DenseFusion`, the one fusion the dense function channel's query path, corpus study and dev report share."""

from __future__ import annotations

import numpy as np
import pytest

from semantica.config import LocalizerConfig
from semantica.localizer.dense import DenseFusion, channel_keys, cosines, function_fusions, function_text, fuse_stages

ORDER = ["a.py::one", "a.py::two", "b.py::three", "b.py::four", "c.py::five"]


def test_the_cosine_order_lifts_a_function_within_the_depth_only():
    cos = {"a.py::one": 0.1, "a.py::two": 0.2, "b.py::three": 0.9, "b.py::four": 0.3, "c.py::five": 1.0}
    fused = DenseFusion(depth=4, rrf_k=1.0, weight=2.0).fuse(ORDER, cos)
    assert fused[0] == "b.py::three"  # 1/4 + 2/2 against one's 1/2 + 2/5
    assert fused[4] == "c.py::five"  # below the depth: its cosine is never read
    assert sorted(fused) == sorted(ORDER)


def test_a_weight_of_zero_or_no_cosines_keeps_the_order():
    cos = {key: float(n) for n, key in enumerate(ORDER)}
    assert DenseFusion(5, 60.0, 0.0).fuse(ORDER, cos) == ORDER
    assert DenseFusion(5, 60.0, 1.0).fuse(ORDER, {}) == ORDER


def test_a_function_without_a_vector_keeps_its_ranking_term():
    fused = DenseFusion(3, 1.0, 1.0).fuse(ORDER, {"a.py::two": 0.5, "b.py::three": 0.9})
    # one: 1/2; two: 1/3 + 1/3; three: 1/4 + 1/2
    assert fused[:3] == ["b.py::three", "a.py::two", "a.py::one"]


def test_cosines_and_function_text():
    vectors = np.array([[1.0, 0.0], [0.6, 0.8]], dtype=np.float32)
    assert cosines(np.array([0.6, 0.8], dtype=np.float32), ["x", "y"], vectors) == {"x": pytest.approx(0.6),
                                                                                     "y": pytest.approx(1.0)}
    assert function_text(["import os", "def f():", "    return 1", ""], 2, 3) == "def f():\n    return 1"


def test_a_span_below_the_head_is_re_ranked_among_itself_only():
    cos = {"a.py::one": 0.1, "a.py::two": 0.2, "b.py::three": 0.3, "b.py::four": 0.4, "c.py::five": 0.9}
    tail = DenseFusion(depth=5, rrf_k=1.0, weight=2.0, start=2)
    fused = tail.fuse(ORDER, cos)
    assert fused[:2] == ORDER[:2]  # above the span: untouched, whatever their cosine
    assert fused[2] == "c.py::five"  # three 1/2 + 2/4; five 1/4 + 2/2 (ranks within the span)
    assert sorted(fused) == sorted(ORDER)


def test_the_channel_stages_fuse_the_head_then_the_tail_below_it():
    config = LocalizerConfig(dense_depth=2, dense_rrf_k=1.0, dense_weight=2.0, dense_tail_depth=5,
                             dense_tail_rrf_k=1.0, dense_tail_weight=2.0)
    head, tail = function_fusions(config)
    assert (head.start, head.depth, tail.start, tail.depth) == (0, 2, 2, 5)
    cos = {"a.py::one": 0.1, "a.py::two": 0.2, "b.py::three": 0.3, "b.py::four": 0.4, "c.py::five": 0.9}
    fused = fuse_stages((head, tail), ORDER, cos)
    assert fused == tail.fuse(head.fuse(ORDER, cos), cos)
    assert fused[:2] == ["a.py::two", "a.py::one"] and fused[2] == "c.py::five"  # five never reaches the head
    assert function_fusions(LocalizerConfig(dense_depth=30, dense_weight=1.0, dense_tail_depth=0)) == (DenseFusion(30, 10.0, 1.0),)
    assert function_fusions(LocalizerConfig()) == (DenseFusion(200, 10.0, 0.5),)  # the default: one fusion to 200


def test_the_channel_leaves_test_code_out_unless_told_otherwise():
    keys = ["pkg/rates.py::rate", "tests/test_rates.py::test_rate", "pkg/conftest.py::fixture", "pkg/testimony.py::f"]
    assert channel_keys(keys, LocalizerConfig(dense_tests=True)) == keys
    assert channel_keys(keys, LocalizerConfig()) == ["pkg/rates.py::rate", "pkg/testimony.py::f"]
    paths = [key.partition("::")[0] for key in keys]  # file paths too: the index leaves test files unparsed
    assert channel_keys(paths, LocalizerConfig()) == ["pkg/rates.py", "pkg/testimony.py"]

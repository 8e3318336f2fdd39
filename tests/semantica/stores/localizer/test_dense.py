"""`DenseFusion`, the one fusion the dense function channel's query path and its lab studies share."""

from __future__ import annotations

import numpy as np
import pytest

from semantica.stores.localizer.dense import DenseFusion, channel_keys, cosines, function_text

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


FILES = ["flag.go", "cli.py", "parse.go", "args.py", "main.go"]


def test_fixed_keys_keep_their_place_and_the_others_are_re_ranked_among_themselves():
    cos = {"flag.go": 0.1, "cli.py": 0.2, "parse.go": 0.9, "args.py": 0.8, "main.go": 1.0}
    fusion = DenseFusion(depth=5, rrf_k=1.0, weight=2.0)
    assert fusion.fuse(FILES, cos)[0] == "main.go"  # trusted everywhere, the Go file with the best cosine rises
    every_go = frozenset(p for p in FILES if p.endswith(".go"))
    assert fusion.fuse(FILES, cos, every_go) == ["flag.go", "args.py", "parse.go", "cli.py", "main.go"]
    only_go = ["flag.go", "parse.go", "main.go"]
    assert fusion.fuse(only_go, cos, frozenset(only_go)) == only_go  # a Go-only head keeps its order


def test_cosines_and_function_text():
    vectors = np.array([[1.0, 0.0], [0.6, 0.8]], dtype=np.float32)
    assert cosines(np.array([0.6, 0.8], dtype=np.float32), ["x", "y"], vectors) == {"x": pytest.approx(0.6),
                                                                                     "y": pytest.approx(1.0)}
    assert function_text(["import os", "def f():", "    return 1", ""], 2, 3) == "def f():\n    return 1"


def test_the_channel_leaves_test_code_out():
    keys = ["pkg/rates.py::rate", "tests/test_rates.py::test_rate", "pkg/conftest.py::fixture", "pkg/testimony.py::f"]
    assert channel_keys(keys) == ["pkg/rates.py::rate", "pkg/testimony.py::f"]
    paths = [key.partition("::")[0] for key in keys]  # file paths too: the index leaves test files unparsed
    assert channel_keys(paths) == ["pkg/rates.py", "pkg/testimony.py"]

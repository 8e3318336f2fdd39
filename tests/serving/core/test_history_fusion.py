"""History lists in localization: the fusion rule, priors that only re-order, and the localizer wiring."""

from __future__ import annotations

import pytest

from semantica.config import HistoryConfig, QueryConfig
from semantica.stores.history.index import HistoryVotes, Vote
from serving.core.fusion import WeightedRRF
from serving.core.granular_fusion import localizer_key
from serving.core.history_fusion import HistoryFusion, HistoryLists
from serving.core.intent import IntentResult
from serving.core.localize import Localizer
from tests.conftest import make_config

R = "acme/shop"


def key(path: str) -> str:
    return localizer_key(R, path)


def test_votes_add_reciprocal_rank_and_priors_only_reorder():
    fusion = HistoryFusion(HistoryConfig(enabled=True, file_weight=0.5, prior_weight=0.2, rrf_k=60))
    lists = HistoryLists(files=[(key("b.py"), 1), (key("c.py"), 2)], prior_files=[(key("a.py"), 1), (key("z.py"), 2)])
    out = fusion.files({key("a.py"): 0.010, key("b.py"): 0.009}, lists)
    assert out[key("a.py")] == pytest.approx(0.010 + 0.2 / 61)
    assert out[key("b.py")] == pytest.approx(0.009 + 0.5 / 61)
    assert out[key("c.py")] == pytest.approx(0.5 / 62)  # a file only history found now competes
    assert key("z.py") not in out  # a prior never adds a file of its own


def test_zero_weights_change_nothing():
    fused = {key("a.py::f"): 0.5}
    lists = HistoryLists(functions=[(key("b.py::g"), 1)], prior_functions=[(key("a.py::f"), 1)])
    assert HistoryFusion(HistoryConfig(enabled=True)).functions(fused, lists) == fused


def test_bad_rrf_k_is_refused():
    with pytest.raises(ValueError, match="history.rrf_k"):
        HistoryFusion(HistoryConfig(rrf_k=0))


def test_lists_from_votes_keep_the_vote_order():
    votes = HistoryVotes(files=[Vote("x.py", 2.0), Vote("y.py", 1.0)], functions=[Vote("x.py::f", 1.0)])
    lists = HistoryLists.from_votes(R, votes, [("y.py", 3.0)], [], k=1)
    assert lists.files == [(key("x.py"), 1)] and lists.functions == [(key("x.py::f"), 1)]
    assert lists.prior_files == [(key("y.py"), 1)]


def test_localizer_fuses_history_only_when_enabled(tmp_path):
    class Chunk:
        def __init__(self, path: str, symbol: str) -> None:
            self.repo, self.path, self.symbol, self.kind = R, path, symbol, "function"

    config = make_config(tmp_path)
    chunks = {"c1": Chunk("a.py", "f"), "c2": Chunk("b.py", "g")}
    lists = {"lexical": [("c1", 1), ("c2", 2)]}
    history = HistoryLists(files=[(key("b.py"), 1)], functions=[(key("b.py::g"), 1)])
    intent = IntentResult.pure("concept")
    query = QueryConfig(**{**vars(config.query), "localize_strategies": ["lexical"]})
    off = Localizer(query, WeightedRRF(config.fusion), config.granular, HistoryConfig(file_weight=5.0))
    on = Localizer(query, WeightedRRF(config.fusion), config.granular,
                   HistoryConfig(enabled=True, file_weight=5.0, function_weight=5.0))
    assert [f["path"] for f in off.localize(lists, chunks, intent, 10, history=history)[0]] == ["a.py", "b.py"]
    files, functions = on.localize(lists, chunks, intent, 10, history=history)
    assert [f["path"] for f in files] == ["b.py", "a.py"]
    assert functions[0]["function"] == "b.py::g"

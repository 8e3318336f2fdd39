"""LocAgent's localization metrics on hand-computed cases."""

import math

import pytest

from jobs.eval.metrics import (
    Gold,
    Prediction,
    acc_at_k,
    capped_recall_at_k,
    dedupe,
    evaluate,
    first_rank,
    mean_metrics,
    metric_value,
    ndcg_at_k,
    normalize_function,
    per_instance_ranks,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    relevance,
)

RANKED = ["a", "b", "c", "d", "e"]


def test_relevance_dedupes_before_marking():
    assert relevance(["a", "x", "a", "b"], {"a", "b"}) == [1, 0, 1]
    assert dedupe(["x", "y", "x"]) == ["x", "y"]


@pytest.mark.parametrize("gold,k,expected", [
    (["a"], 1, 1.0),
    (["b"], 1, 0.0),
    (["b"], 2, 1.0),
    (["a", "c"], 2, 0.0),      # c is at rank 3
    (["a", "c"], 3, 1.0),
    (["z"], 5, 0.0),
    (["a", "b", "z"], 2, 1.0),  # more gold than k: the top 2 are all gold
    (["a", "c", "z"], 2, 0.0),  # more gold than k, rank 2 is not gold
    (["a", "b", "z"], 5, 0.0),  # z never found
])
def test_acc_at_k(gold, k, expected):
    assert acc_at_k(RANKED, gold, k) == expected


def test_acc_duplicates_are_dropped_first():
    # LocAgent de-duplicates predictions, so the repeated "a" does not push "b" out of the top 2
    assert acc_at_k(["a", "a", "b"], ["a", "b"], 2) == 1.0
    assert acc_at_k(["a", "a"], ["a", "b"], 5) == 0.0


def test_recall_precision():
    assert recall_at_k(RANKED, ["a", "d", "z"], 5) == pytest.approx(2 / 3)
    assert recall_at_k(RANKED, ["a", "d", "z"], 3) == pytest.approx(1 / 3)
    assert recall_at_k(RANKED, [], 3) == 0.0
    assert precision_at_k(RANKED, ["a", "d", "z"], 5) == pytest.approx(2 / 5)
    assert precision_at_k(["a"], ["a"], 5) == pytest.approx(1 / 5)  # short lists are not rewarded


def test_capped_recall_divides_by_min_of_k_and_gold():
    many = ["a", "b", "c", "d", "e", "f", "g"]  # 7 gold, k = 5: plain recall cannot pass 5/7
    assert recall_at_k(RANKED, many, 5) == pytest.approx(5 / 7)
    assert capped_recall_at_k(RANKED, many, 5) == 1.0
    assert capped_recall_at_k(RANKED, ["a", "d", "z"], 5) == pytest.approx(2 / 3)  # equal when |gold| <= k
    assert capped_recall_at_k(RANKED, [], 5) == 0.0


def test_mrr_and_first_rank():
    assert reciprocal_rank(RANKED, ["c", "e"]) == pytest.approx(1 / 3)
    assert reciprocal_rank(RANKED, ["z"]) == 0.0
    assert first_rank(["x", "x", "y"], ["y"]) == 2  # ranks count de-duplicated items
    assert reciprocal_rank([], ["a"]) == 0.0


def test_ndcg_hand_computed():
    # gold at ranks 2 and 4 out of 2 gold: DCG = 1/log2(3) + 1/log2(5); IDCG = 1 + 1/log2(3)
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(RANKED, ["b", "d"], 10) == pytest.approx(expected)
    assert ndcg_at_k(RANKED, ["a"], 10) == 1.0
    assert ndcg_at_k(RANKED, ["e"], 3) == 0.0
    assert ndcg_at_k(RANKED, [], 3) == 0.0
    # more gold than k: the ideal is k ones
    assert ndcg_at_k(["a", "b"], ["a", "b", "c"], 2) == pytest.approx(1.0)


def test_metric_value_by_name_and_errors():
    assert metric_value("Acc@1", RANKED, ["a"]) == 1.0
    assert metric_value("MRR", RANKED, ["b"]) == 0.5
    with pytest.raises(ValueError, match="unknown metric"):
        metric_value("F1@3", RANKED, ["a"])
    with pytest.raises(ValueError, match="positive"):
        acc_at_k(RANKED, ["a"], 0)
    with pytest.raises(ValueError, match="gold"):
        acc_at_k(RANKED, [], 1)


def test_mean_skips_instances_without_gold():
    scores = mean_metrics([(["a"], ["a"]), (["a"], ["b"]), (["a"], [])], ["Acc@1", "MRR"])
    assert scores.n == 2
    assert scores.metrics == {"Acc@1": 0.5, "MRR": 0.5}
    assert mean_metrics([], ["Acc@1"]).to_dict() == {"n": 0, "Acc@1": 0.0}


def test_normalize_function_folds_init():
    assert normalize_function("m.py::A.__init__") == "m.py::A"
    assert normalize_function("m.py::A.init") == "m.py::A.init"


def test_evaluate_overall_and_per_repo():
    gold = {
        "r1": Gold("o/one", ["x.py"], ["x.py::A.__init__"]),
        "r2": Gold("o/one", ["y.py"], []),
        "r3": Gold("o/two", ["z.py"], ["z.py::f"]),
        "r4": Gold("o/two", ["w.py"], ["w.py::g"]),  # no prediction
    }
    preds = {
        "r1": Prediction(["x.py", "y.py"], ["x.py::A", "x.py::B.m"]),  # __init__ folded: found at 1
        "r2": Prediction(["x.py", "y.py"], []),
        "r3": Prediction(["a.py", "b.py", "c.py"], ["z.py::h", "z.py::f"]),
    }
    result = evaluate(preds, gold)
    assert result["instances"] == 3 and result["missing"] == ["r4"]
    file_scores, fn_scores = result["overall"]["file"], result["overall"]["function"]
    assert file_scores["n"] == 3
    assert file_scores["Acc@1"] == pytest.approx(1 / 3)
    assert file_scores["Acc@3"] == pytest.approx(2 / 3)
    assert file_scores["MRR"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert fn_scores["n"] == 2  # r2 has no gold functions
    assert fn_scores["Acc@5"] == 1.0
    assert fn_scores["MRR"] == pytest.approx((1 + 0.5) / 2)
    assert result["by_repo"]["o/one"]["file"]["Acc@1"] == 0.5
    assert result["by_repo"]["o/two"]["function"]["n"] == 1
    # LocAgent's convention: a missing prediction scores zero
    strict = evaluate(preds, gold, missing_as_empty=True)
    assert strict["instances"] == 4
    assert strict["overall"]["file"]["Acc@3"] == pytest.approx(2 / 4)
    ranks = per_instance_ranks(preds, gold)
    assert ranks["r1"] == {"repo": "o/one", "file_rank": 1, "function_rank": 1}
    assert ranks["r2"]["function_rank"] is None and ranks["r3"]["file_rank"] == 0

"""Localization metrics with LocAgent's definitions (its `utils/eval_metric.py`), as pure functions.

Every function takes one ranked prediction list and the gold items of one instance; `evaluate`
averages them over instances (and per repository). As in LocAgent:

- predictions are de-duplicated (first occurrence wins) before scoring;
- the ideal ranking puts the gold items first, so with more gold items than `k` the best possible
  top k is "all gold";
- Acc@k is 1 when the top k hold as many gold items as the ideal top k (every gold item when there
  are at most k of them; else the top k are all gold);
- Recall@k = gold items in the top k / number of gold items; Precision@k = gold items in top k / k;
- NDCG@k with binary gains and log2(rank + 1) discounts, normalised by the ideal ranking;
- instances without gold items are skipped (LocAgent's `if not gt_dict[instance_id]: continue`);
- at function level, a trailing `.__init__` is dropped on both sides (`Class.__init__` == `Class`).

MRR (not in LocAgent's file) is the reciprocal rank of the first gold item, 0 when none is ranked.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

INIT_SUFFIX = ".__init__"
_METRIC = re.compile(r"^(Acc|Recall|Precision|NDCG)@(\d+)$|^MRR$")


def dedupe(ranked: Iterable[str]) -> list[str]:
    """First occurrence of each item, order kept."""
    return list(dict.fromkeys(ranked))


def normalize_function(name: str) -> str:
    """`path::Class.__init__` -> `path::Class` (LocAgent's function-level folding)."""
    return name[: -len(INIT_SUFFIX)] if name.endswith(INIT_SUFFIX) else name


def relevance(ranked: Sequence[str], gold: Iterable[str]) -> list[int]:
    """1/0 per de-duplicated predicted item: is it a gold item."""
    gold_set = set(gold)
    return [1 if item in gold_set else 0 for item in dedupe(ranked)]


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise ValueError(f"k must be a positive integer, got {k!r}")


def acc_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """1.0 when the top k hold min(|gold|, k) gold items, else 0.0."""
    _check_k(k)
    gold_set = set(gold)
    if not gold_set:
        raise ValueError("acc_at_k needs at least one gold item")
    found = sum(relevance(ranked, gold_set)[:k])
    return 1.0 if found == min(len(gold_set), k) else 0.0


def recall_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Share of the gold items found in the top k."""
    _check_k(k)
    gold_set = set(gold)
    if not gold_set:
        return 0.0
    return sum(relevance(ranked, gold_set)[:k]) / len(gold_set)


def capped_recall_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Gold items in the top k / min(k, number of gold items): 1.0 when the top k are all gold even if
    there are more than k gold items (plain `recall_at_k` cannot reach 1 then)."""
    _check_k(k)
    gold_set = set(gold)
    if not gold_set:
        return 0.0
    return sum(relevance(ranked, gold_set)[:k]) / min(k, len(gold_set))


def precision_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Gold items in the top k, divided by k (a short list is not rewarded for being short)."""
    _check_k(k)
    return sum(relevance(ranked, gold)[:k]) / k


def reciprocal_rank(ranked: Sequence[str], gold: Iterable[str]) -> float:
    """1 / rank of the first gold item, 0.0 when no gold item is ranked."""
    rank = first_rank(ranked, gold)
    return 1.0 / rank if rank else 0.0


def first_rank(ranked: Sequence[str], gold: Iterable[str]) -> int:
    """1-based rank of the first gold item among the de-duplicated predictions, 0 when none."""
    for rank, rel in enumerate(relevance(ranked, gold), 1):
        if rel:
            return rank
    return 0


def _dcg(gains: Sequence[int]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Binary-gain NDCG@k against the ideal ranking (all gold first); 0.0 without gold."""
    _check_k(k)
    gold_set = set(gold)
    ideal = _dcg([1] * min(len(gold_set), k))
    return _dcg(relevance(ranked, gold_set)[:k]) / ideal if ideal else 0.0


def metric_value(name: str, ranked: Sequence[str], gold: Iterable[str]) -> float:
    """One metric by name: `Acc@k`, `Recall@k`, `Precision@k`, `NDCG@k` or `MRR`."""
    match = _METRIC.match(name)
    if not match:
        raise ValueError(f"unknown metric {name!r}: use Acc@k, Recall@k, Precision@k, NDCG@k or MRR")
    if name == "MRR":
        return reciprocal_rank(ranked, gold)
    kind, k = match.group(1), int(match.group(2))
    fn = {"Acc": acc_at_k, "Recall": recall_at_k, "Precision": precision_at_k, "NDCG": ndcg_at_k}[kind]
    return fn(ranked, gold, k)


FILE_METRICS = ("Acc@1", "Acc@3", "Acc@5", "Recall@5", "MRR", "NDCG@10")
FUNCTION_METRICS = ("Acc@5", "Acc@10", "Recall@10", "MRR", "NDCG@10")


@dataclass
class LevelScores:
    """Mean metrics over the instances that have gold items at one level."""

    n: int = 0
    metrics: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"n": self.n, **{k: round(v, 6) for k, v in self.metrics.items()}}


def mean_metrics(pairs: Sequence[tuple[Sequence[str], Sequence[str]]], names: Sequence[str]) -> LevelScores:
    """Average each named metric over (ranked, gold) pairs whose gold is non-empty."""
    kept = [(ranked, gold) for ranked, gold in pairs if gold]
    if not kept:
        return LevelScores(0, {name: 0.0 for name in names})
    return LevelScores(len(kept), {
        name: sum(metric_value(name, ranked, gold) for ranked, gold in kept) / len(kept) for name in names
    })


@dataclass
class Prediction:
    """One instance's ranked files and functions."""

    files: list[str]
    functions: list[str]


@dataclass
class Gold:
    """One instance's gold files and functions (functions may be empty) and its repository."""

    repo: str
    files: list[str]
    functions: list[str]


def evaluate(
    predictions: Mapping[str, Prediction],
    gold: Mapping[str, Gold],
    file_metrics: Sequence[str] = FILE_METRICS,
    function_metrics: Sequence[str] = FUNCTION_METRICS,
    missing_as_empty: bool = False,
) -> dict:
    """Overall and per-repository means.

    Scored instances are those with a prediction (or every gold instance with `missing_as_empty`,
    LocAgent's convention, an absent prediction scoring 0). Function metrics use only instances with
    gold functions. Returns `{"overall": {"file": {...}, "function": {...}}, "by_repo": {repo: same},
    "instances": n, "missing": [ids without a prediction]}`.
    """
    ids = [i for i in gold if i in predictions or missing_as_empty]
    missing = sorted(i for i in gold if i not in predictions)
    groups: dict[str, list[str]] = defaultdict(list)
    for iid in ids:
        groups[gold[iid].repo].append(iid)

    def level_scores(subset: Sequence[str]) -> dict:
        empty = Prediction([], [])
        file_pairs = [(predictions.get(i, empty).files, gold[i].files) for i in subset]
        function_pairs = [
            ([normalize_function(f) for f in predictions.get(i, empty).functions],
             [normalize_function(f) for f in gold[i].functions])
            for i in subset
        ]
        return {"file": mean_metrics(file_pairs, file_metrics).to_dict(),
                "function": mean_metrics(function_pairs, function_metrics).to_dict()}

    return {
        "overall": level_scores(ids),
        "by_repo": {repo: level_scores(members) for repo, members in sorted(groups.items())},
        "instances": len(ids),
        "missing": missing,
    }


def per_instance_ranks(predictions: Mapping[str, Prediction], gold: Mapping[str, Gold]) -> dict[str, dict]:
    """For diagnosis: the rank of the first gold file / function per predicted instance (0 = not found)."""
    out: dict[str, dict] = {}
    for iid, pred in predictions.items():
        if iid not in gold:
            continue
        g = gold[iid]
        out[iid] = {
            "repo": g.repo,
            "file_rank": first_rank(pred.files, g.files),
            "function_rank": first_rank([normalize_function(f) for f in pred.functions],
                                        [normalize_function(f) for f in g.functions]) if g.functions else None,
        }
    return out

"""Budgets across repositories: shares always sum to K; the merge keeps the primary first and dedups by sha."""

from __future__ import annotations

import pytest

from semantica.config import PlanningBudgetsConfig
from semantica.hits import Hit
from semantica.schema import Chunk
from serving.planning.budgets import RepoBudgets


@pytest.mark.parametrize("share", [0.6, 0.34, 1.0])
def test_budgets_sum_to_k_exactly(share):
    budgets = RepoBudgets(PlanningBudgetsConfig(primary_share=share))
    for k in range(0, 21):
        for n in range(1, 7):
            repos = [f"r{i}" for i in range(n)]
            plan = budgets.allocate(k, repos, top_scores={r: float(i) for i, r in enumerate(repos)})
            assert sum(plan.budgets.values()) == k and set(plan.budgets) == set(repos)
            assert plan.primary == repos[-1]  # best top score
            assert all(v >= 0 for v in plan.budgets.values())


def test_primary_choice_and_share():
    budgets = RepoBudgets(PlanningBudgetsConfig())
    plan = budgets.allocate(10, ["a", "b", "c"], named=["b", "a"], top_scores={"a": 9.0})
    assert plan.primary == "b" and plan.budgets == {"b": 6, "a": 2, "c": 2}
    assert budgets.allocate(10, ["a", "b"], requested="a", named=["b"]).primary == "a"
    assert budgets.allocate(10, ["a", "b"], requested="zz", named=["b"]).primary == "b"  # not searched: ignored
    with pytest.raises(ValueError, match="primary_share"):
        RepoBudgets(PlanningBudgetsConfig(primary_share=0.0))


def _chunk(repo: str, n: int, sha: str) -> Chunk:
    return Chunk(chunk_id=f"{repo}-{n}", repo=repo, path=f"{n}.py", language="python", start_line=1, end_line=2,
                 kind="function", symbol=f"f{n}", content="x", content_sha=sha)


def test_merge_puts_primary_first_fills_and_dedups():
    chunks = {c.chunk_id: c for c in [
        _chunk("a", 1, "s1"), _chunk("b", 1, "s1"), _chunk("b", 2, "s2"), _chunk("a", 2, "s3"),
        _chunk("b", 3, "s4"), _chunk("b", 4, "s5")]}
    order = ["b-1", "a-1", "b-2", "a-2", "b-3", "b-4"]  # by score; b-1 and a-1 share a content sha
    hits = [Hit(chunk_id=c, score=1.0 / (i + 1), fused_score=1.0 / (i + 1)) for i, c in enumerate(order)]
    budgets = RepoBudgets(PlanningBudgetsConfig())
    plan = budgets.allocate(4, ["a", "b"], named=["a"])
    assert plan.budgets == {"a": 3, "b": 1}
    merged = [h.chunk_id for h in budgets.merge(hits, plan, chunks, 4)]
    # a-1 and b-1 share a sha: the primary's copy stays; a fills 2 of its 3, b's 1 + the unused 1 follow
    assert merged[:4] == ["a-1", "a-2", "b-2", "b-3"] and "b-1" not in merged and merged[4:] == ["b-4"]

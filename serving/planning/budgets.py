"""Result budgets across repositories: the primary repository gets `primary_share` of K, the others split
the rest, and the merged list puts the primary's hits first, deduplicated by chunk content sha."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from semantica.config import PlanningBudgetsConfig
from semantica.hits import Hit
from semantica.schema import Chunk


@dataclass
class BudgetPlan:
    """Who is primary, why, and each repository's share of K (the shares sum to K)."""

    primary: str
    why: str
    budgets: dict[str, int]


class RepoBudgets:
    """`allocate(k, repos, ...)` -> `BudgetPlan`; `merge(hits, plan, chunks)` -> hits in budget order."""

    def __init__(self, config: PlanningBudgetsConfig) -> None:
        if not 0.0 < config.primary_share <= 1.0:
            raise ValueError(f"planning.budgets.primary_share must be in (0, 1], got {config.primary_share}")
        self.config = config

    def allocate(self, k: int, repos: Sequence[str], requested: str | None = None,
                 named: Sequence[str] = (), top_scores: Mapping[str, float] | None = None) -> BudgetPlan:
        """Primary: the request's `primary_repo`, else the first named repository, else the one with the
        best top score. The others split K - primary in order of their top score (earlier ones get the
        remainder), so the budgets always sum to exactly K."""
        if k < 0:
            raise ValueError(f"k must be >= 0, got {k}")
        if not repos:
            return BudgetPlan("", "no repository", {})
        scores = dict(top_scores or {})
        if requested and requested in repos:
            primary, why = requested, "named by the request (primary_repo)"
        elif named and named[0] in repos:
            primary, why = named[0], "first repository named"
        else:
            primary = max(repos, key=lambda r: (scores.get(r, float("-inf")), -repos.index(r)))
            why = f"best top score ({scores.get(primary, 0.0):.4f})" if scores else "first repository"
        others = sorted((r for r in repos if r != primary), key=lambda r: (-scores.get(r, 0.0), repos.index(r)))
        if not others:
            return BudgetPlan(primary, why, {primary: k})
        primary_budget = min(k, max(1 if k else 0, math.ceil(k * self.config.primary_share)))
        rest = k - primary_budget
        share, extra = divmod(rest, len(others))
        budgets = {primary: primary_budget}
        for i, repo in enumerate(others):
            budgets[repo] = share + (1 if i < extra else 0)
        return BudgetPlan(primary, why, budgets)

    @staticmethod
    def merge(hits: Sequence[Hit], plan: BudgetPlan, chunks: Mapping[str, Chunk], k: int) -> list[Hit]:
        """Each repository's best hits up to its budget (primary first, then the others by score); a
        budget a repository cannot fill goes to the best remaining hits. Copies by content sha are
        dropped, the primary repository's copy kept. The rest follow, in score order."""
        def repo_of(hit: Hit) -> str:
            chunk = chunks.get(hit.chunk_id)
            return chunk.repo if chunk is not None else ""

        def sha_of(hit: Hit) -> str:
            chunk = chunks.get(hit.chunk_id)
            return chunk.content_sha if chunk is not None and chunk.content_sha else hit.chunk_id

        keep: dict[str, str] = {}  # sha -> the chunk id that stays: the primary's first, else the first
        for hit in sorted(hits, key=lambda h: repo_of(h) != plan.primary):  # stable: score order within
            keep.setdefault(sha_of(hit), hit.chunk_id)
        unique = [h for h in hits if keep[sha_of(h)] == h.chunk_id]
        by_repo: dict[str, list[Hit]] = {}
        for hit in unique:
            by_repo.setdefault(repo_of(hit), []).append(hit)
        head: list[Hit] = []
        for repo, budget in plan.budgets.items():
            head.extend(by_repo.get(repo, [])[:budget])
        taken = {h.chunk_id for h in head}
        primary = [h for h in head if repo_of(h) == plan.primary]
        others = sorted((h for h in head if repo_of(h) != plan.primary), key=lambda h: -h.score)
        rest = [h for h in unique if h.chunk_id not in taken]
        return primary + others + rest  # a budget left unfilled goes to the best remaining hits

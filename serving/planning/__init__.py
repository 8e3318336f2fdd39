"""The query planner: a rule-based query analyzer picks a search mode and a dynamic K, budgets
split K across repositories, and a graduated retry escalates weak answers; `SearchResponse.plan` records
every decision. Decomposition and multi-hop live beside it (decompose.py, multihop.py)."""

from serving.planning.modes import RetryLevel, SearchMode

__all__ = ["RetryLevel", "SearchMode"]

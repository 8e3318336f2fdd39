"""The query planner: a rule-based query analyzer picks a search mode, and `SearchResponse.plan` records
every decision. Decomposition lives beside it (decompose.py, expand.py)."""

from serving.planning.modes import SearchMode

__all__ = ["SearchMode"]

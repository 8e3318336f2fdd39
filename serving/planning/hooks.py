"""The two places the query pipeline calls into the ranking side of query planning:
which fusion to use (a repository's feedback-learned weights, when their A/B said so) and the per-snapshot
file graphs of the repository map (shared with the MCP `repo_map` tool)."""

from __future__ import annotations

from typing import Any

from semantica.runtime.token_count import TokenCounter
from semantica.snapshot import Snapshot
from serving.planning.feedback_weights import LearnedFusion
from serving.planning.repo_map import RepoMapper


class RankingHooks:
    def __init__(self, config: Any) -> None:
        self.config = config
        self.learned = LearnedFusion(config)
        # per-snapshot file graphs, shared with MCP `repo_map`; budgets in the encoder's tokens, as MCP counts them
        self.mapper = RepoMapper(config.repo_map, TokenCounter(config.encoder.model_path).count)

    def fusion(self, snapshots: list[Snapshot], default: Any) -> Any:
        """The repository's learned fusion for a one-repository query whose weights won their A/B, else `default`."""
        return self.learned.for_repos([s.repo for s in snapshots]) or default

    def cache_tag(self, snapshots: list[Snapshot]) -> tuple[str, ...]:
        """Part of the response cache key: learning new weights (`weights --learn`) must not serve old answers."""
        return self.learned.tag([s.repo for s in snapshots])

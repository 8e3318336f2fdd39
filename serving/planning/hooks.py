"""The two places the query pipeline calls into the ranking side of query planning:
which fusion to use (a repository's feedback-learned weights, when their A/B said so) and the final
order of the localized files (trust and freshness). Rerankers (`final_order`, `repo_scope`) need no hook."""

from __future__ import annotations

from typing import Any

from semantica.snapshot import Snapshot
from serving.planning.feedback_weights import LearnedFusion
from serving.planning.final_order import FinalOrder
from serving.planning.repo_map import RepoMapper


class RankingHooks:
    def __init__(self, config: Any) -> None:
        self.config = config
        self.learned = LearnedFusion(config)
        self.final = FinalOrder(config.final_order, config.paths.cache_dir)
        self.mapper = RepoMapper(config.repo_map)  # per-snapshot file graphs, shared by `repo_map` and scope

    def fusion(self, snapshots: list[Snapshot], default: Any) -> Any:
        """The repository's learned fusion for a one-repository query whose weights won their A/B, else `default`."""
        return self.learned.for_repos([s.repo for s in snapshots]) or default

    def cache_tag(self, snapshots: list[Snapshot]) -> tuple[str, ...]:
        """Part of the response cache key: learning new weights (`weights --learn`) must not serve old answers."""
        return self.learned.tag([s.repo for s in snapshots])

    def files(self, files: list[dict[str, Any]], snapshots: list[Snapshot]) -> list[dict[str, Any]]:
        """Localized files reordered by trust and freshness (weights 0 = as is; the localization tail asks only
        when `final_order.apply_to_files`)."""
        by_repo = {s.repo: s for s in snapshots}
        fresh: dict[str, Any] = {}

        def fresh_of(repo: str, path: str) -> float:
            if repo not in fresh:
                fresh[repo] = self.final.freshness.of(by_repo[repo]) if repo in by_repo else (lambda _p: 0.0)
            return fresh[repo](path)

        return self.final.order_files(files, fresh_of)

"""Rerankers: a registry keyed by name, and the order from conf (`rerank.order`).

`SearchPipeline` runs the configured rerankers in order and knows nothing else about them: adding one
is a class implementing `serving.rerankers.base.Reranker` (in its own module) registered with
`@register_reranker("name")`, plus its name in `rerank.order` (docs/extending.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from semantica.config import ConfigError
from serving.rerankers.base import Reranker, RerankerFactory, RerankInput

__all__ = ["RERANKERS", "RerankInput", "Reranker", "RerankerFactory", "build_rerankers", "register_reranker"]

RERANKERS: dict[str, RerankerFactory] = {}


def register_reranker(name: str) -> Callable[[RerankerFactory], RerankerFactory]:
    def add(factory: RerankerFactory) -> RerankerFactory:
        RERANKERS[name] = factory
        return factory

    return add


def build_rerankers(order: list[str], pipeline: Any) -> list[Reranker]:
    """The configured rerankers, in order; an unknown name is a clear error listing the known ones."""
    _load_builtins()
    unknown = [n for n in order if n not in RERANKERS]
    if unknown:
        raise ConfigError(f"rerank.order: unknown reranker(s) {unknown}; registered: {sorted(RERANKERS)}")
    return [RERANKERS[name](pipeline) for name in order]



def _load_builtins() -> None:
    """The built-in and query-planning rerankers register themselves on import (kept lazy, like the retrievers'
    builtins: planning imports this registry, so a module-level import would be a cycle)."""
    from serving.planning import final_order, repo_map  # noqa: F401  (registers final_order, repo_scope)
    from serving.rerankers import builtin  # noqa: F401  (registers ltr, late_interaction, cross_encoder)

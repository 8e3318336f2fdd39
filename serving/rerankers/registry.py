"""Rerankers: a registry keyed by name, and the order from conf (`rerank.order`).

`SearchPipeline` runs the configured rerankers in order and knows nothing else about them: adding one
is a class implementing `serving.rerankers.base.Reranker` (in its own module, owning its model) registered
with `@register_reranker("name")`, plus its name in `rerank.order` (docs/extending.md). A reranker whose
class says `deployed = True` gets its own Serve deployment (`serving.ray.remote.reranker_deployment`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from semantica.config import ConfigError
from serving.rerankers.base import Reranker, RerankerFactory, RerankInput

__all__ = ["RERANKERS", "RerankInput", "Reranker", "RerankerFactory", "build_rerankers", "deployed_rerankers",
           "register_reranker", "registered_rerankers"]

RERANKERS: dict[str, RerankerFactory] = {}


def register_reranker(name: str) -> Callable[[RerankerFactory], RerankerFactory]:
    def add(factory: RerankerFactory) -> RerankerFactory:
        RERANKERS[name] = factory
        return factory

    return add


def _checked(order: list[str]) -> list[str]:
    """`order`, or a clear error listing the registered names when one is unknown."""
    _load_builtins()
    unknown = [n for n in order if n not in RERANKERS]
    if unknown:
        raise ConfigError(f"rerank.order: unknown reranker(s) {unknown}; registered: {sorted(RERANKERS)}")
    return order


def build_rerankers(order: list[str], stages: Any) -> list[Reranker]:
    """The configured rerankers, in order (building one loads no model)."""
    return [RERANKERS[name](stages) for name in _checked(order)]


def deployed_rerankers(order: list[str]) -> list[str]:
    """The configured rerankers whose class asks for its own Serve deployment, in order."""
    return [name for name in _checked(order) if getattr(RERANKERS[name], "deployed", False)]


def registered_rerankers() -> list[str]:
    """Every registered reranker's name (built-ins included)."""
    _load_builtins()
    return sorted(RERANKERS)


def _load_builtins() -> None:
    """The built-in rerankers register themselves on import (kept lazy, like the retrievers' builtins)."""
    from serving.rerankers import cross_encoder, late_interaction  # noqa: F401  (register themselves)

"""Retrievers: one protocol (`serving.retrievers.base.Retriever`), a registry keyed by name, and the
enabled set from conf (`retrieval.retrievers`).

A new index kind is one module with a retriever class, one `register_retriever(...)` line and its conf
(`retrieval.retrievers`, `fusion.rrf_k`, `fusion.extra_weights`): the pipeline, the Serve graph (one
deployment per registered retriever) and fusion pick it up by name (docs/extending.md).
Retrievers are named by string; the four built-ins that own fusion features are listed, in
feature order, by the versioned schema (`semantica.feature_schema`): a new retriever is fused and
explained, but adds no feature until the schema lists it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from semantica.config import ConfigError

if TYPE_CHECKING:
    from serving.retrievers.repo import RepoRetrievers

RetrieverFactory = Callable[["RepoRetrievers"], Any]
"""Builds one retriever over `RepoRetrievers.snapshot` (the factory may use its encoder and query encoder)."""


@dataclass(frozen=True)
class RetrieverSpec:
    """How to build a retriever and when it runs: `seeded_by` names the retrievers whose hits seed it,
    so it runs after them (the graph walk starts from the symbol and lexical hits); the others run at once."""

    name: str
    build: RetrieverFactory
    seeded_by: tuple[str, ...] = ()


RETRIEVERS: dict[str, RetrieverSpec] = {}


def register_retriever(name: str, build: RetrieverFactory, seeded_by: tuple[str, ...] = ()) -> RetrieverSpec:
    """Register (or replace) a retriever under `name`; returns its spec."""
    spec = RetrieverSpec(name=name, build=build, seeded_by=tuple(seeded_by))
    RETRIEVERS[name] = spec
    return spec


def unregister_retriever(name: str) -> None:
    RETRIEVERS.pop(name, None)


def retriever_spec(name: str) -> RetrieverSpec:
    """The spec of a registered retriever; an unknown name is a clear error listing the known ones."""
    _load_builtins()
    spec = RETRIEVERS.get(str(name).strip().lower())
    if spec is None:
        raise ValueError(f"unknown strategy {name!r}; known strategies: {', '.join(RETRIEVERS)}")
    return spec


def retriever_name(name: str) -> str:
    """The registered name a ranked list is keyed by (case and spaces folded); unknown is a ValueError."""
    return retriever_spec(name).name


def conf_retriever_names(names: Iterable[str], where: str) -> list[str]:
    """The registered names of the retrievers a conf key lists, in order; an unknown one is a ConfigError
    naming the key and listing the registered retrievers."""
    try:
        return [retriever_name(n) for n in names]
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def enabled_specs(names: list[str]) -> list[RetrieverSpec]:
    """The configured retrievers in run order (seed sources before the retrievers they seed)."""
    try:
        specs = [retriever_spec(n) for n in names]
    except ValueError as exc:
        raise ConfigError(f"retrieval.retrievers: {exc}") from None
    chosen = {s.name for s in specs}
    ordered: list[RetrieverSpec] = []
    pending = list(specs)
    while pending:
        ready = [s for s in pending if all(d in {o.name for o in ordered} or d not in chosen for d in s.seeded_by)]
        if not ready:
            raise ConfigError(f"retrieval.retrievers: seeding cycle among {[s.name for s in pending]}")
        ordered.extend(ready)
        pending = [s for s in pending if s not in ready]
    return ordered


def _load_builtins() -> None:
    """The built-in retrievers register themselves on import (kept lazy: they import FAISS and Lucene)."""
    import serving.retrievers.builtin  # noqa: F401

"""The index-kind registry: kinds are written in registration order and opened by name."""

from __future__ import annotations

from semantica.stores.index_kinds.base import IndexKind

_KINDS: dict[str, IndexKind] = {}


def register_index_kind(kind: IndexKind) -> IndexKind:
    """Add (or replace) a kind; every later snapshot write builds it, and `Snapshot.index(name)` opens it."""
    _KINDS[kind.name] = kind
    return kind


def unregister_index_kind(name: str) -> None:
    _KINDS.pop(name, None)


def index_kind(name: str) -> IndexKind:
    try:
        return _KINDS[name]
    except KeyError:
        raise KeyError(f"unknown index kind {name!r}; registered: {', '.join(_KINDS)}") from None


def index_kinds() -> list[IndexKind]:
    """Every registered kind, in the order they are written."""
    return list(_KINDS.values())

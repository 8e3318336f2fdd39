"""The protocol every query stage satisfies: a name (its registry key) and `run(state) -> state`."""

from __future__ import annotations

from typing import Protocol

from serving.query.state import QueryState


class QueryStage(Protocol):
    """One step of the query path. It reads the fields earlier stages filled, fills its own and returns the
    state; a stage whose feature is off (or that does not apply to this request) returns the state as it came."""

    name: str

    def run(self, state: QueryState) -> QueryState: ...

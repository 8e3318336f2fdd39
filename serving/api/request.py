"""One request builder for every front (the CLI in-process, the query daemon, HTTP, MCP): the fields a front
read become one request (`SearchRequest`, `GrepRequest`, `GraphRequest`) whose `repos` are the published
names it reads at its branch, resolved here once and nowhere else.

A front only reads its own input (argv, a socket message, a validated HTTP body, an MCP tool's arguments)
into the request's fields; what a field means, which names are unknown and how a branch becomes
`repo@branch` keys is decided here, so the four fronts cannot drift apart.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from semantica.api import QueryError

Request = TypeVar("Request")
Scope = Callable[[list[str]], list[str]]
"""A front's access check on the resolved names (HTTP: the caller's token); it returns the names to read."""


class PublishedNames(Protocol):
    """What resolving a branch needs of `semantica.snapshot.SnapshotSet`."""

    def names_for(self, repos: list[str], branch: str | None) -> list[str]: ...


def branch_names(snapshots: PublishedNames, repos: list[str], branch: str | None) -> list[str]:
    """The published names a request reads: `repos` as named on the default branch (none named: every
    default-branch repository, which the pipeline resolves), or each one's `repo@branch` key at `branch`
    (none named: every repository indexed at it; `BranchNotIndexed` when there is none)."""
    return snapshots.names_for(list(repos), branch) if branch else list(repos)


class RequestBuilder:
    """Builds the one request every front sends, over the snapshots that resolve its branch."""

    def __init__(self, snapshots: PublishedNames) -> None:
        self.snapshots = snapshots

    def build(self, request_type: type[Request], values: Mapping[str, Any], branch: str | None = None,
              scope: Scope | None = None) -> Request:
        """`request_type(**values)` with `repos` resolved at `branch`, then passed through `scope`; a field the
        request does not have is a QueryError that lists the ones it has."""
        known = {f.name for f in dataclasses.fields(request_type)}  # type: ignore[arg-type]
        unknown = sorted(set(values) - known)
        if unknown:
            raise QueryError(f"unknown request field(s) {unknown}; known: {', '.join(sorted(known))}")
        request = request_type(**values)
        repos = branch_names(self.snapshots, list(getattr(request, "repos", [])), branch)
        request.repos = scope(repos) if scope is not None else repos  # type: ignore[attr-defined]
        return request

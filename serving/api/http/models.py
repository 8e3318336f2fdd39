"""Request bodies of the HTTP API: strict types (k is an int, not `true`), known strategies, safe repository
names and clean strings. A bad field is a 422 that names the field and, for enums, the valid values."""

from __future__ import annotations

import dataclasses
import math
import unicodedata
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, StrictInt, create_model, field_validator, model_validator

from semantica.api import SearchRequest
from semantica.ondisk.branch_keys import check_branch
from serving.api.http.security import check_repo_name
from serving.planning.modes import SearchMode
from serving.retrievers.registry import retriever_spec

KEEP_CONTROLS = {"\n", "\t"}


def clean_text(value: str) -> str:
    """Lone surrogates -> U+FFFD, control characters (but newline and tab) dropped: storable, printable."""
    fixed = value.encode("utf-8", "replace").decode("utf-8")
    return "".join(c for c in fixed if c in KEEP_CONTROLS or unicodedata.category(c) != "Cc")


def clean_json(value: Any, where: str = "value") -> Any:
    """`clean_text` on every string of a JSON value; non-finite numbers are refused (they are not JSON)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where}: {value} is not JSON; send finite numbers only")
    if isinstance(value, list):
        return [clean_json(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {clean_text(str(k)): clean_json(v, f"{where}.{k}") for k, v in value.items()}
    return value


def whole_number(value: Any) -> Any:
    """An integral float (`5.0`) as the integer it is: JSON Schema's `integer` admits it, so the API does;
    `5.5`, `true` and strings still fail the strict integer check after this."""
    return int(value) if isinstance(value, float) and math.isfinite(value) and value.is_integer() else value


def _repo_names(names: list[str]) -> list[str]:
    return [check_repo_name(n) for n in names]


class RepoScopedBody(BaseModel):
    """A body's `repos` as safe repository names and its `branch` as a valid branch key, where it has them."""

    @field_validator("repos", check_fields=False)
    @classmethod
    def _valid_repos(cls, names: list[str]) -> list[str]:
        return _repo_names(names)

    @field_validator("branch", check_fields=False)
    @classmethod
    def _valid_branch(cls, name: str | None) -> str | None:
        return check_branch(name) if name is not None else None


class _SearchChecks(RepoScopedBody):
    """What a search body gets on top of `SearchRequest`'s fields: strict JSON types, no unknown fields,
    safe repository names, known strategies and a non-negative budget; and `branch`, which the ingress
    resolves to the published names the request reads (as `semantica query --branch` and MCP do)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    branch: str | None = Field(default=None, description="search this branch's snapshots (indexed with `semantica "
                                                         "index --ref`); default: the default branch")

    @field_validator("strategies", check_fields=False)
    @classmethod
    def _known_strategies(cls, names: list[str]) -> list[str]:
        return [retriever_spec(n).name for n in names]  # ValueError lists the registered ones -> 422

    @field_validator("mode", check_fields=False)
    @classmethod
    def _known_mode(cls, name: str | None) -> str | None:
        return SearchMode.parse(name).value if name is not None else None  # ValueError lists the modes -> 422

    @field_validator("k", "context_budget", mode="before", check_fields=False)
    @classmethod
    def _whole(cls, value: Any) -> Any:
        return whole_number(value)

    @field_validator("context_budget", check_fields=False)
    @classmethod
    def _budget(cls, value: int | None) -> int | None:
        if value is not None and value < 0:
            raise ValueError("context_budget must be >= 0")
        return value


def body_model(name: str, request_type: type, checks: type[BaseModel]) -> type[BaseModel]:
    """A request body model generated from a request dataclass: its fields, types, defaults and docs."""
    hints = get_type_hints(request_type)
    columns: dict[str, Any] = {}
    for f in dataclasses.fields(request_type):
        if f.default_factory is not dataclasses.MISSING:
            spec = Field(default_factory=f.default_factory, description=f.metadata.get("doc"))
        elif f.default is not dataclasses.MISSING:
            spec = Field(default=f.default, description=f.metadata.get("doc"))
        else:
            spec = Field(description=f.metadata.get("doc"))
        columns[f.name] = (hints[f.name], spec)
    return create_model(name, __base__=checks, __doc__=f"`{request_type.__name__}` as an HTTP body.", **columns)


SearchBody = body_model("SearchBody", SearchRequest, _SearchChecks)
"""`POST /v1/search`: `semantica.api.SearchRequest`'s fields (generated, never written twice) and `branch`."""


class GraphBody(RepoScopedBody):
    """`POST /v1/graph`: {op, name, repos, depth}."""

    model_config = ConfigDict(extra="forbid")
    op: str = Field(description="callers, callees, defs, refs, impls, importers or imports")
    name: str = Field(description="bare, dotted (Class.method, module.func) or path::Qual.name")
    repos: list[str] = Field(default_factory=list, description="empty = every repository the caller may read")
    depth: StrictInt | None = Field(default=None, description="transitive hops (default graph_ops.default_depth)")

    @field_validator("depth", mode="before")
    @classmethod
    def _whole(cls, value: Any) -> Any:
        return whole_number(value)


class GrepBody(RepoScopedBody):
    """`POST /v1/grep`: exact or regex search (serving.retrievers.exact), ripgrep's switches as fields."""

    model_config = ConfigDict(extra="forbid", strict=True)
    pattern: str = Field(description="a fixed string, or with regex=true an RE2 regular expression")
    regex: bool = Field(default=False, description="pattern is a regular expression (RE2 syntax)")
    ignore_case: bool = Field(default=False, description="Unicode simple case folding (rg -i)")
    word: bool = Field(default=False, description="a non-word character or a line edge on each side (rg -w)")
    path_globs: list[str] = Field(default_factory=list, description="rg --glob on the repository-relative path")
    context: StrictInt = Field(default=0, description="lines before and after each match (rg -C)")
    repos: list[str] = Field(default_factory=list, description="empty = every repository the caller may read")
    branch: str | None = Field(default=None, description="this branch's snapshots; default: the default branch")
    max_count: StrictInt | None = Field(default=None, description="matching lines in the whole answer "
                                                                   "(default exact.default_max_count)")

    @field_validator("context", "max_count", mode="before")
    @classmethod
    def _whole(cls, value: Any) -> Any:
        return whole_number(value)


class FeedbackBody(RepoScopedBody):
    """`POST /v1/feedback`: which hits of a query were useful. Strings are cleaned before they are stored."""

    model_config = ConfigDict(extra="forbid")
    query: str = Field(description="the query the hits answered")
    chunk_ids: list[str] = Field(default_factory=list, description="selected chunk ids")
    hits: list[dict[str, Any]] = Field(default_factory=list, description="selected hits as returned by /v1/search")
    repos: list[str] = Field(default_factory=list)
    snapshots: dict[str, str] = Field(default_factory=dict)
    rating: float | None = Field(default=None, allow_inf_nan=False, strict=True)  # a JSON number, not `true`
    comment: str | None = None
    knowledge_ids: list[str] = Field(default_factory=list, description="knowledge entries the answer used "
                                     "(context.knowledge[].id): one vote each, down when rating <= 0")

    @field_validator("snapshots")
    @classmethod
    def _valid_snapshot_repos(cls, ids: dict[str, str]) -> dict[str, str]:
        """Each key as sent is a repository name (a control character in it is refused, not dropped)."""
        return {check_repo_name(repo): clean_text(snapshot) for repo, snapshot in ids.items()}

    @field_validator("query", "comment", "chunk_ids", "hits", "knowledge_ids", mode="before")
    @classmethod
    def _clean(cls, value: Any) -> Any:
        return clean_json(value)

    @field_validator("query")
    @classmethod
    def _some_text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the query holds only spaces or control characters; send the query the hits answered")
        return value

    @model_validator(mode="after")
    def _selects_something(self) -> FeedbackBody:
        if not self.chunk_ids and not self.hits and not self.knowledge_ids:
            raise ValueError("feedback selects nothing: send at least one chunk id (chunk_ids), hit (hits) or "
                             "knowledge entry (knowledge_ids)")
        return self


class MapBody(RepoScopedBody):
    """`POST /v1/map`: a repository map. `repos` names one repository (empty: the caller's only one)."""

    model_config = ConfigDict(extra="forbid")
    repos: list[str] = Field(default_factory=list, description="the one repository to map")
    query: str = Field(default="", description="what the map is for: its identifiers and paths seed the ranking")
    tokens: StrictInt | None = Field(default=None, description="token budget (default repo_map.default_tokens)")

    @field_validator("tokens", mode="before")
    @classmethod
    def _whole(cls, value: Any) -> Any:
        return whole_number(value)

    @field_validator("query", mode="before")
    @classmethod
    def _clean(cls, value: Any) -> Any:
        return clean_json(value)

"""`/v1/knowledge` over the ingress core: list/search (GET), one entry (GET /v1/knowledge/{id}), add (POST).

Scopes are the search scopes: a token reads the stores of the repositories it may read plus the global
store; any other repository is answered exactly like one that does not exist (404, same message), so a
token scoped elsewhere learns nothing about those entries. Only an unrestricted token writes the global store;
an entry names a published repository (no store is created for any other name); an `adr` or `doc` source
must name a file of that repository's snapshot, and any other source is recorded as the token's claim
(`source_ref: "token:NAME claims ..."`).
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from semantica.api import CONTENT_TRUST
from semantica.ondisk.repo_names import RepoNameError, normalize_repo_name
from serving.api.http.errors import Forbidden, NotFound, PayloadTooLarge, Unprocessable
from serving.api.http.models import RepoScopedBody
from serving.api.http.security import Principal
from serving.knowledge.entry import SourceKind, Status
from serving.knowledge.service import KnowledgeService
from serving.knowledge.store import KnowledgeInputError, UnknownEntryError

TOO_LARGE = 413
STATUSES = tuple(s.value for s in Status)
"""The `status` values `GET /v1/knowledge` filters on (also the enum the OpenAPI document lists)."""


class KnowledgeBody(RepoScopedBody):
    """`POST /v1/knowledge`: one entry. `repo` '' = the global store. `repos` is the guard's scope (ignored)."""

    model_config = ConfigDict(extra="forbid")
    repo: str = Field(default="", description="the repository it is about; '' = global (unrestricted tokens only)")
    repos: list[str] = Field(default_factory=list, description="ignored (set by the scope guard)")
    title: str
    text: str
    kind: str = Field(default="fact", description="decision | rule | fact | how-to")
    paths: list[str] = Field(default_factory=list)
    symbols: list[str] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)
    source_kind: str = Field(default="person", description="person | adr | doc | agent (agent: a candidate)")
    source_ref: str = ""


def _claimed_by(principal: Principal, ref: str) -> str:
    return f"token:{principal.name}" + (f" claims {ref}" if ref else "")


def _unknown_repo(name: str) -> NotFound:
    return NotFound(f"repository {name!r} has no published snapshot (or this token may not read it)")


class KnowledgeApi:
    def __init__(self, service: KnowledgeService) -> None:
        self.service = service

    def readable(self, principal: Principal, repo: str | None) -> list[str] | None:
        """Store names this caller may read (None: all); a repository it may not read is a 404 like an unknown one."""
        if repo:
            try:
                name = normalize_repo_name(repo)
            except RepoNameError as exc:
                raise Unprocessable(f"repo: {exc}") from None
            if not principal.may_read(name):
                raise _unknown_repo(name)
            return [name]
        if principal.unrestricted:
            return None
        return [s.repo for s in self.service.base.stores(None, include_global=False) if principal.may_read(s.repo)]

    def list(self, principal: Principal, repo: str | None, query: str, status: list[str], limit: int) -> dict[str, Any]:
        unknown = [s for s in status if s not in STATUSES]
        if unknown:
            raise Unprocessable(f"status {unknown[0]!r} is not a knowledge status: send one of {', '.join(STATUSES)} "
                                "(none: active)", detail=[{"field": "status", "message": "unknown status"}])
        statuses = tuple(Status.parse(s) for s in status) or (Status.ACTIVE,)
        entries = self.service.list(self.readable(principal, repo), statuses, query, limit)
        return {"entries": [e.to_dict() for e in entries], "threshold": self.service.config.knowledge.threshold,
                "content_trust": CONTENT_TRUST}

    def _checked_source(self, principal: Principal, values: dict[str, Any], index: Any) -> str:
        """Provenance is checked, not taken: an `adr` or `doc` source names a file of the repository's
        snapshot (else 422); any other source (a person, an agent) is recorded as this token's claim."""
        kind, ref = str(values.get("source_kind") or ""), str(values.get("source_ref") or "").strip()
        if kind in (SourceKind.ADR.value, SourceKind.DOC.value):
            if index is None or not ref or "*" in ref:  # what the document rules out (`contract.py`)
                raise Unprocessable(f"source_kind {kind!r} needs source_ref naming a file of the repository's "
                                    "snapshot (the ADR or doc itself)")
            if ref not in index.files:  # a file the snapshot does not have: nothing there to cite
                raise NotFound(f"source_ref {ref!r} names no file of the repository's snapshot (source_kind "
                               f"{kind!r} cites the ADR or doc itself)")
            return ref
        return _claimed_by(principal, ref)[: self.service.config.knowledge.max_title_chars]

    def get(self, principal: Principal, entry_id: str) -> dict[str, Any]:
        try:
            return self.service.show(entry_id, self.readable(principal, None))
        except UnknownEntryError:
            raise NotFound(f"no knowledge entry {entry_id!r} (or this token may not read it)") from None

    def add(self, principal: Principal, body: KnowledgeBody) -> dict[str, Any]:
        values = body.model_dump(exclude={"repo", "repos"})
        index = None
        if body.repo:
            [repo] = self.readable(principal, body.repo) or [body.repo]
            index = self.service.snapshot_index(repo)
            if index is None:  # a store exists only for a published repository: no file for a made-up name
                raise _unknown_repo(repo)
        elif not principal.unrestricted:
            raise Forbidden("the global knowledge store takes entries only from a token that may read every "
                            "repository; name your repository in `repo`")
        else:
            repo = ""
        try:
            values["source_ref"] = self._checked_source(principal, values, index)
            return self.service.add(repo, values, actor=principal.name).to_dict()
        except KnowledgeInputError as exc:
            raise (PayloadTooLarge(str(exc)) if exc.status == TOO_LARGE else Unprocessable(str(exc))) from None

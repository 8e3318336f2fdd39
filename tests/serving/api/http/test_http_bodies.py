"""Every request body that names repositories or a branch checks them with the one validator (`RepoScopedBody`):
a bad name is a validation error (HTTP 422), whichever route's body carries it."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from serving.api.http.knowledge import KnowledgeBody
from serving.api.http.models import FeedbackBody, GraphBody, GrepBody, MapBody, SearchBody

BAD_REPO, BAD_BRANCH = "../etc", "   "
BODIES = [(SearchBody, {"query": "cart"}), (GraphBody, {"op": "defs", "name": "x"}), (GrepBody, {"pattern": "x"}),
          (FeedbackBody, {"query": "cart", "chunk_ids": ["c"]}), (MapBody, {}),
          (KnowledgeBody, {"title": "t", "text": "x"})]


@pytest.mark.parametrize(("model", "body"), BODIES, ids=[m.__name__ for m, _ in BODIES])
def test_a_bad_repository_name_is_refused_by_every_body(model: type[BaseModel], body: dict) -> None:
    assert model.model_validate({**body, "repos": ["acme/shop"]}).repos == ["acme/shop"]
    with pytest.raises(ValidationError, match="repos"):
        model.model_validate({**body, "repos": [BAD_REPO]})


@pytest.mark.parametrize("model", [SearchBody, GrepBody])
def test_a_bad_branch_is_refused_where_a_body_has_one(model: type[BaseModel]) -> None:
    body = dict(BODIES)[model]
    assert model.model_validate({**body, "branch": "release/1.2"}).branch == "release/1.2"
    with pytest.raises(ValidationError, match="branch"):
        model.model_validate({**body, "branch": BAD_BRANCH})

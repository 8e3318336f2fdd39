"""`POST /v1/grep` on the real ingress app: matches with freshness, bad patterns as JSON 400/422 (never 500), and
the same per-token repository scope as `/v1/search`."""

from __future__ import annotations

import pytest
import yaml

from serving.api.http.security import ensure_token_file
from tests.serving.local_ingress import client, local_stage_handles, make_core, run, variant
from tests.serving.ray.test_app import REPO_NAME, make_tiny_index

pytestmark = pytest.mark.timeout(300)
SECRET_REPO = "team/secret"
SCOPED_TOKEN = "tiny-only-token-grep-0123456789"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """The tiny shop indexed under two names, a main token and one scoped to tiny/*."""
    from pipelines.indexer import Indexer

    root = tmp_path_factory.mktemp("http-grep")
    config = make_tiny_index(root)
    Indexer(config, progress=False).index(str(root / "repo"), SECRET_REPO)
    token_file, _ = ensure_token_file(root / "secrets" / "token")
    tokens = root / "secrets" / "tokens.yaml"
    tokens.write_text(yaml.safe_dump([{"name": "tiny-team", "token": SCOPED_TOKEN, "repos": ["tiny/*"]}]))
    secured = variant(config, "auth.mode=required", f"auth.token_file={token_file}", f"auth.tokens_file={tokens}")
    return config, secured, local_stage_handles(config), token_file.read_text().strip()


async def _post(core, body, headers=None):
    async with client(core, headers) as http:
        return await http.post("/v1/grep", json=body)


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_grep_answers_matches_ordered_with_freshness(setup):
    config, _, handles, _ = setup
    core = make_core(config, handles)
    r = run(_post(core, {"pattern": "def ", "repos": [REPO_NAME], "max_count": 2}))
    assert r.status_code == 200, r.text
    body = r.json()
    assert len(body["matches"]) == 2 and body["truncated"] is True
    keys = [(m["path"], m["line"]) for m in body["matches"]]
    assert keys == sorted(keys) and all(m["text"].lstrip().startswith("def") for m in body["matches"])
    assert REPO_NAME in body["freshness"] and body["degraded"] == []
    both = run(_post(core, {"pattern": r"def \w+\(", "regex": True})).json()
    assert {m["repo"] for m in both["matches"]} == {REPO_NAME, SECRET_REPO}  # no repos: every one


@pytest.mark.parametrize("body, status, says", [
    ({"pattern": "(unclosed", "regex": True}, 400, "invalid regex"),
    ({"pattern": "x" * 1001}, 400, "max_pattern_chars"),
    ({"pattern": "x", "max_count": 0}, 400, "max_count"),
    ({"pattern": "x", "max_count": "3"}, 422, ""),
    ({"pattern": "x", "unknown": 1}, 422, ""),
    ({}, 422, ""),
])
def test_bad_requests_are_json_4xx(setup, body, status, says):
    config, _, handles, _ = setup
    r = run(_post(make_core(config, handles), body))
    assert r.status_code == status, r.text
    assert says in r.json().get("message", "") and "Traceback" not in r.text


def test_a_scoped_token_greps_only_its_repositories(setup):
    _, secured, handles, token = setup
    core = make_core(secured, handles)
    assert run(_post(core, {"pattern": "def "})).status_code == 401
    scoped = run(_post(core, {"pattern": "def "}, _bearer(SCOPED_TOKEN)))
    assert scoped.status_code == 200 and {m["repo"] for m in scoped.json()["matches"]} == {REPO_NAME}
    assert set(scoped.json()["freshness"]) == {REPO_NAME}
    hidden = run(_post(core, {"pattern": "def ", "repos": [SECRET_REPO]}, _bearer(SCOPED_TOKEN)))
    assert hidden.status_code == 404 and "may not read it" in hidden.json()["message"]  # as /v1/search answers
    full = run(_post(core, {"pattern": "def "}, _bearer(token))).json()
    assert {m["repo"] for m in full["matches"]} == {REPO_NAME, SECRET_REPO}

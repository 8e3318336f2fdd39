"""`/v1/knowledge` on the real ingress app: the search scopes hold, bad input is a clear 4xx, and a token
scoped to other repositories learns nothing about their entries (not even that they exist)."""

from __future__ import annotations

import json

import pytest
import yaml

from serving.api.http.security import ensure_token_file
from tests.serving.local_ingress import client, local_stage_handles, make_core, run, variant
from tests.serving.ray.test_app import REPO_NAME, make_tiny_index

pytestmark = pytest.mark.timeout(300)
SECRET_REPO = "team/secret"
SCOPED_TOKEN = "tiny-only-token-knowledge-0123456789"
SECRET_RULE = {"repo": SECRET_REPO, "title": "Cart prices come from the secret tariff",
               "text": "price_of reads the secret tariff table before any cart total is computed.",
               "kind": "rule", "symbols": ["price_of"]}
OWN_RULE = {"repo": REPO_NAME, "title": "Cart totals use price_of",
            "text": "Cart.total sums price_of for every cart item; prices are integer cents.",
            "kind": "rule", "symbols": ["price_of", "Cart.total"]}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from pipelines.indexer import Indexer

    root = tmp_path_factory.mktemp("knowledge-http")
    config = make_tiny_index(root, "planning.enabled=false")
    Indexer(config, progress=False).index(str(root / "repo"), SECRET_REPO)
    token_file, _ = ensure_token_file(root / "secrets" / "token")
    tokens = root / "secrets" / "tokens.yaml"
    tokens.write_text(yaml.safe_dump([{"name": "tiny-team", "token": SCOPED_TOKEN, "repos": ["tiny/*"]}]))
    secured = variant(config, "auth.mode=required", f"auth.token_file={token_file}", f"auth.tokens_file={tokens}")
    core = make_core(secured, local_stage_handles(config))
    return core, {"Authorization": f"Bearer {token_file.read_text().strip()}"}, {"Authorization": f"Bearer {SCOPED_TOKEN}"}


def _call(core, method, path, headers, body=None):
    async def go():
        async with client(core, headers) as http:
            if method != "POST":
                return await http.get(path)
            # json.dumps escapes a lone surrogate as JSON's "\\ud800" (httpx's json= cannot encode it)
            return await http.post(path, content=json.dumps(body), headers={"Content-Type": "application/json"})

    return run(go())


def test_knowledge_scopes_hold_over_http(setup):
    core, full, scoped = setup
    secret = _call(core, "POST", "/v1/knowledge", full, SECRET_RULE)
    assert secret.status_code == 201, secret.text
    secret_id = secret.json()["entry"]["id"]
    own = _call(core, "POST", "/v1/knowledge", scoped, OWN_RULE)
    assert own.status_code == 201 and own.json()["entry"]["verification"] == "green", own.text
    own_id = own.json()["entry"]["id"]

    everything = _call(core, "GET", "/v1/knowledge", full).json()["entries"]
    assert {secret_id, own_id} <= {e["id"] for e in everything}
    mine = _call(core, "GET", "/v1/knowledge?query=cart+price_of+tariff", scoped)
    assert mine.status_code == 200 and [e["id"] for e in mine.json()["entries"]] == [own_id]
    assert mine.json()["content_trust"] == "untrusted"
    assert "tariff" not in mine.text and SECRET_REPO not in mine.text

    # another repository's entries answer exactly like a repository or an entry that does not exist
    hidden = _call(core, "GET", f"/v1/knowledge?repo={SECRET_REPO}", scoped)
    missing = _call(core, "GET", "/v1/knowledge?repo=team/nothing", scoped)
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json()["message"].replace(SECRET_REPO, "X") == missing.json()["message"].replace("team/nothing", "X")
    hidden_entry = _call(core, "GET", f"/v1/knowledge/{secret_id}", scoped)
    missing_entry = _call(core, "GET", "/v1/knowledge/k-000000000000", scoped)
    assert hidden_entry.status_code == missing_entry.status_code == 404
    assert hidden_entry.json()["message"].replace(secret_id, "X") == missing_entry.json()["message"].replace(
        "k-000000000000", "X")
    assert _call(core, "GET", f"/v1/knowledge/{secret_id}", full).json()["entry"]["title"] == SECRET_RULE["title"]
    assert _call(core, "POST", "/v1/knowledge", scoped, SECRET_RULE).status_code == 404
    assert _call(core, "POST", "/v1/knowledge", scoped, {**OWN_RULE, "repo": ""}).status_code == 403
    assert _call(core, "GET", "/v1/knowledge", None).status_code == 401

    # the search context of a scoped token carries its own entry and never the other repository's
    answer = _call(core, "POST", "/v1/search", scoped, {"query": "how is the cart total price computed from price_of"})
    assert answer.status_code == 200
    used = [k["id"] for k in answer.json()["context"]["knowledge"]]
    assert used == [own_id] and "tariff" not in answer.text
    feedback = _call(core, "POST", "/v1/feedback", scoped, {"query": "q", "knowledge_ids": [secret_id, own_id],
                                                            "rating": 1})
    assert feedback.status_code == 201 and feedback.json()["knowledge_moved"] == [own_id]


@pytest.mark.parametrize("change, status, words", [
    ({"text": "x " * 4500}, 413, "max_text_chars"),
    ({"text": "binary \u0000 text"}, 422, "binary"),
    ({"kind": "opinion"}, 422, "unknown kind"),
    ({"text": "y" * 30_000}, 413, "max_string_chars"),
    ({"repo": "../etc"}, 422, "repo"),
    ({"title": "lone \ud800 surrogate"}, 422, "surrogate"),
    ({"text": "lone \udfff surrogate"}, 422, "surrogate"),
    ({"symbols": ["price_\ud834"]}, 422, "surrogate"),
])
def test_bad_entries_are_clear_4xx(setup, change, status, words):
    core, full, _ = setup
    r = _call(core, "POST", "/v1/knowledge", full, {**OWN_RULE, **change})
    assert r.status_code == status and words in r.text, r.text
    assert json.loads(r.text)["error"]


def test_unknown_symbol_is_a_warning(setup):
    core, full, _ = setup
    r = _call(core, "POST", "/v1/knowledge", full, {**OWN_RULE, "title": "Refunds", "symbols": ["refund_order"]})
    assert r.status_code == 201 and "refund_order" in r.json()["warnings"][0]
    assert r.json()["entry"]["verification"] == "failed"


def test_claimed_sources_are_checked_or_recorded_as_the_tokens_claim(setup):
    core, _, scoped = setup
    made_up = _call(core, "POST", "/v1/knowledge", scoped,
                    {**OWN_RULE, "title": "Security rule", "source_kind": "adr", "source_ref": "ADR-042 security team"})
    assert made_up.status_code == 404 and "source_ref" in made_up.text  # no such file in the snapshot
    real = _call(core, "POST", "/v1/knowledge", scoped,
                 {**OWN_RULE, "title": "The readme", "source_kind": "doc", "source_ref": "README.md"})
    assert real.status_code == 201 and real.json()["entry"]["source_ref"] == "README.md"
    person = _call(core, "POST", "/v1/knowledge", scoped,
                   {**OWN_RULE, "title": "A person's rule", "source_kind": "person", "source_ref": "the CTO"})
    assert person.status_code == 201 and person.json()["entry"]["source_ref"] == "token:tiny-team claims the CTO"


def test_votes_name_their_voter_and_stay_in_scope(setup):
    core, full, scoped = setup
    service = core.pipeline.knowledge.service
    posted = _call(core, "POST", "/v1/knowledge", full, {**OWN_RULE, "repo": "", "title": "A global rule",
                                                          "text": "Every price is integer cents in every shop."})
    assert posted.status_code == 201, posted.text
    global_id = posted.json()["entry"]["id"]
    for _ in range(11):  # a scoped token cannot vote a global entry down (it writes only its own stores)
        down = _call(core, "POST", "/v1/feedback", scoped, {"query": "q", "knowledge_ids": [global_id], "rating": -1})
        assert down.status_code == 201 and down.json()["knowledge_moved"] == []
    assert service.base.store("").get(global_id).votes == 0
    own_id = _call(core, "POST", "/v1/knowledge", scoped, {**OWN_RULE, "title": "Voted rule"}).json()["entry"]["id"]
    for _ in range(5):  # one vote per voter per entry: repeating it moves nothing more
        assert _call(core, "POST", "/v1/feedback", scoped, {"query": "q", "knowledge_ids": [own_id],
                                                            "rating": -1}).json()["knowledge_moved"] == [own_id]
    store = service.base.store(REPO_NAME)
    assert store.get(own_id).votes == -1 and store.voters(own_id) == {"token:tiny-team": -1.0}


def test_stores_exist_only_for_published_repositories(setup):
    """150 writes for names the token's glob matches but nobody published: 404 each, no store file, no descriptor."""
    import os

    core, _, scoped = setup
    directory = core.pipeline.knowledge.service.base.directory
    before_files = set(directory.glob("*")) if directory.exists() else set()
    before_fds = len(os.listdir("/proc/self/fd"))
    for n in range(150):
        r = _call(core, "POST", "/v1/knowledge", scoped, {**OWN_RULE, "repo": f"tiny/ghost-{n}"})
        assert r.status_code == 404 and "no published snapshot" in r.text, r.text
    assert (set(directory.glob("*")) if directory.exists() else set()) == before_files
    assert len(os.listdir("/proc/self/fd")) <= before_fds + 5

"""Bearer tokens, the Host allowlist and per-token repository scopes on the real ingress app."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
import yaml

from semantica.config import ConfigError
from serving.api.http.security import ensure_token_file
from tests.serving.local_ingress import call_asgi, client, ingress_app, local_stage_handles, make_core, run, variant
from tests.serving.ray.test_app import REPO_NAME, make_tiny_index

pytestmark = pytest.mark.timeout(300)
SECRET_REPO = "team/secret"
SCOPED_TOKEN = "tiny-only-token-0123456789"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """Two repositories (the tiny shop indexed twice, under two names), a main token and a scoped one."""
    from pipelines.indexer import Indexer

    root = tmp_path_factory.mktemp("http-auth")
    config = make_tiny_index(root)
    Indexer(config, progress=False).index(str(root / "repo"), SECRET_REPO)
    token_file, created = ensure_token_file(root / "secrets" / "token")
    assert created
    tokens = root / "secrets" / "tokens.yaml"
    tokens.write_text(yaml.safe_dump([{"name": "tiny-team", "token": SCOPED_TOKEN, "repos": ["tiny/*"]}]))
    secured = variant(config, "auth.mode=required", f"auth.token_file={token_file}", f"auth.tokens_file={tokens}",
                      "auth.allowed_hosts=[search.example.com]")
    return secured, local_stage_handles(config), token_file.read_text().strip()


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def _get(core, path, headers=None):
    async with client(core, headers) as http:
        return await http.get(path)


async def _post(core, path, body, headers=None):
    async with client(core, headers) as http:
        return await http.post(path, json=body)


def test_token_file_is_created_private_and_kept(tmp_path):
    path, created = ensure_token_file(tmp_path / "a" / "token")
    assert created and stat.S_IMODE(path.stat().st_mode) == 0o600 and len(path.read_text().strip()) >= 32
    again, created_again = ensure_token_file(path)
    assert again == path and not created_again


def test_missing_or_wrong_token_is_401_json(setup):
    config, handles, token = setup
    core = make_core(config, handles)
    for headers in (None, _bearer("wrong"), _bearer(token[:-1]), {"Authorization": f"Basic {token}"}):
        r = run(_post(core, "/v1/search", {"query": "cart"}, headers))
        assert r.status_code == 401 and r.json()["error"] == "Unauthorized", r.text
        assert r.headers["www-authenticate"] == "Bearer" and token not in r.text
    assert run(_get(core, "/v1/repos")).status_code == 401
    assert run(_get(core, "/metrics")).status_code == 401
    ok = run(_post(core, "/v1/search", {"query": "cart"}, _bearer(token)))
    assert ok.status_code == 200 and ok.json()["hits"]


def test_healthz_is_public_but_tells_a_stranger_only_the_status(setup):
    config, handles, token = setup
    core = make_core(config, handles)
    anonymous = run(_get(core, "/healthz")).json()
    assert anonymous["status"] == "ok" and "repos" not in anonymous
    known = run(_get(core, "/healthz", _bearer(token))).json()
    assert {r["repo"] for r in known["repos"]} == {REPO_NAME, SECRET_REPO}


def test_loopback_default_needs_no_token_but_other_binds_do(setup, tmp_path):
    config, handles, _ = setup
    loopback = make_core(variant(config, "auth.mode=auto", "serve.host=127.0.0.1"), handles)
    assert run(_post(loopback, "/v1/search", {"query": "cart"})).status_code == 200
    no_token = variant(config, "auth.mode=auto", "serve.host=0.0.0.0", f"auth.token_file={tmp_path / 'none'}",
                       "auth.tokens_file=''")
    with pytest.raises(ConfigError, match="token"):
        make_core(no_token, handles)  # fails closed: never an open API on the network
    with pytest.raises(ConfigError, match="auth.mode"):
        make_core(variant(config, "auth.mode=off"), handles)


@pytest.mark.parametrize("host", ["evil.example", "attacker.test:8000", "127.0.0.1.evil.example", "",
                                  "[::1]evil.example", "[::1]:8000evil", "localhost:80:80", "[::1", "[evil]:80",
                                  "localhost@evil.example", "127.0.0.1:"])
def test_unknown_host_header_is_refused(setup, host):
    config, handles, token = setup
    core = make_core(config, handles)
    r = run(_post(core, "/v1/search", {"query": "cart"}, {**_bearer(token), "Host": host}))
    assert r.status_code == 400 and r.json()["reason"] == "host_not_allowed", r.text


@pytest.mark.parametrize("second", ["evil.example", "localhost"])
def test_two_host_headers_are_a_400_even_when_the_first_is_allowed(setup, second):
    """RFC 9112 3.2: a request with more than one Host header is invalid; the first used to decide."""
    config, handles, token = setup
    app = ingress_app(make_core(config, handles))
    status, body = run(call_asgi(app, "GET", "/v1/repos", [b""], [(b"host", second.encode()),
                                                                   (b"authorization", f"Bearer {token}".encode())]))
    assert status == 400 and json.loads(body)["reason"] == "duplicate_host", body


@pytest.mark.parametrize("host", ["localhost:8000", "127.0.0.1", "[::1]:8000", "search.example.com"])
def test_allowed_host_headers_pass(setup, host):
    config, handles, token = setup
    core = make_core(config, handles)
    assert run(_get(core, "/v1/repos", {**_bearer(token), "Host": host})).status_code == 200


def test_a_scoped_token_cannot_read_another_repository_through_any_endpoint(setup):
    config, handles, token = setup
    core = make_core(config, handles)
    scoped = _bearer(SCOPED_TOKEN)
    full = run(_post(core, "/v1/search", {"query": "price_of cart total", "k": 20}, _bearer(token))).json()
    assert SECRET_REPO in {h["repo"] for h in full["hits"]}  # the other repository does answer this query
    mine = run(_post(core, "/v1/search", {"query": "price_of cart total", "k": 20}, scoped))
    assert mine.status_code == 200 and mine.json()["hits"]
    assert {h["repo"] for h in mine.json()["hits"]} == {REPO_NAME}
    assert SECRET_REPO not in json.dumps(mine.json())
    for body in ({"query": "cart", "repos": [SECRET_REPO]}, {"query": "cart", "repos": [REPO_NAME, SECRET_REPO]},
                 {"query": "cart", "repos": ["team/*"]}):
        r = run(_post(core, "/v1/search", body, scoped))
        assert r.status_code == 404 and "snippet" not in r.text, r.text
    feedback = run(_post(core, "/v1/feedback", {"query": "q", "chunk_ids": ["x"], "repos": [SECRET_REPO]}, scoped))
    assert feedback.status_code == 404
    hit_feedback = run(_post(core, "/v1/feedback", {"query": "q", "hits": [{"repo": SECRET_REPO, "chunk_id": "x"}]},
                             scoped))
    assert hit_feedback.status_code == 404
    assert run(_post(core, "/v1/feedback", {"query": "q", "chunk_ids": ["x"]}, scoped)).status_code == 201
    async def untyped(body):  # no content type: whatever FastAPI makes of it, no other repository leaks
        async with client(core, scoped) as http:
            return await http.post("/v1/search", content=json.dumps(body).encode())

    assert run(untyped({"query": "cart", "repos": [SECRET_REPO]})).status_code in (404, 422)
    untyped_answer = run(untyped({"query": "price_of cart total", "k": 20}))
    assert untyped_answer.status_code == 422 or {h["repo"] for h in untyped_answer.json()["hits"]} == {REPO_NAME}
    listing = run(_get(core, "/v1/repos", scoped)).json()
    assert [r["repo"] for r in listing] == [REPO_NAME]
    health = run(_get(core, "/healthz", scoped)).json()
    assert [r["repo"] for r in health["repos"]] == [REPO_NAME] and SECRET_REPO not in json.dumps(health)
    assert run(_get(core, "/metrics", scoped)).status_code == 403


def test_scoped_tokens_file_errors_are_clear(setup, tmp_path):
    config, handles, _ = setup
    bad = tmp_path / "tokens.yaml"
    bad.write_text(yaml.safe_dump([{"name": "x", "token": "t"}]))
    with pytest.raises(ConfigError, match="repos"):
        make_core(variant(config, f"auth.tokens_file={bad}"), handles)
    with pytest.raises(ConfigError, match="does not exist"):
        make_core(variant(config, f"auth.tokens_file={Path(tmp_path) / 'missing.yaml'}"), handles)


def test_serve_run_builder_takes_auth_from_the_bind_address_in_serve_yaml(tmp_path):
    """`serve run conf/serve.yaml` binds http_options.host: an open bind must not leave the API open."""
    from serving.ray.app import build_app, http_host

    exposed = tmp_path / "serve.yaml"
    exposed.write_text("http_options: {host: 0.0.0.0, port: 8000}\napplications: [{name: semantica}]\n")
    assert http_host(exposed) == "0.0.0.0" and http_host(None) == "127.0.0.1"
    app = build_app({"serve_config": str(exposed), "index_root": str(tmp_path / "index"),
                     "overrides": [f"auth.token_file={tmp_path / 'no-token'}"]})
    ingress_config = app._bound_deployment.init_args[0]
    assert ingress_config["serve"]["host"] == "0.0.0.0"  # so IngressCore requires a token (and fails closed)


def test_an_unknown_repository_error_names_only_what_the_token_may_read(setup):
    config, handles, token = setup
    core = make_core(config, handles)
    for path, body in (("/v1/search", {"query": "cart", "repos": ["tiny/nonexistent"]}),
                       ("/v1/graph", {"op": "defs", "name": "price_of", "repos": ["tiny/nonexistent"]})):
        scoped = run(_post(core, path, body, _bearer(SCOPED_TOKEN)))
        assert scoped.status_code == 404, scoped.text
        assert SECRET_REPO not in scoped.text and REPO_NAME in scoped.json()["message"], scoped.text
        full = run(_post(core, path, body, _bearer(token)))
        assert full.status_code == 404 and SECRET_REPO in full.json()["message"]  # a token that reads all sees all


def test_feedback_snapshots_outside_the_scope_are_refused_and_not_stored(setup):
    config, handles, _ = setup
    core = make_core(config, handles)
    before = _stored_feedback(config)
    body = {"query": "q", "chunk_ids": ["x"], "snapshots": {SECRET_REPO: "20260101T000000-abc"}}
    refused = run(_post(core, "/v1/feedback", body, _bearer(SCOPED_TOKEN)))
    assert refused.status_code == 404 and refused.json()["error"] == "NotFound", refused.text
    assert _stored_feedback(config) == before
    bad_name = run(_post(core, "/v1/feedback", {**body, "snapshots": {"../x": "s"}}, _bearer(SCOPED_TOKEN)))
    assert bad_name.status_code == 422
    mine = run(_post(core, "/v1/feedback", {**body, "snapshots": {REPO_NAME: "s"}}, _bearer(SCOPED_TOKEN)))
    assert mine.status_code == 201
    stored = Path(config.serve.feedback_dir) / mine.json()["file"]
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600  # queries and comments: not world-readable
    assert stat.S_IMODE(stored.parent.stat().st_mode) & 0o077 == 0


def _stored_feedback(config) -> list[str]:
    return [line for f in sorted(Path(config.serve.feedback_dir).glob("*.jsonl")) for line in f.read_text().splitlines()]


@pytest.mark.parametrize("path", ["/v1/search", "/v1/plan", "/v1/graph"])
def test_another_method_on_a_post_route_is_405_naming_post(setup, path):
    """A scoped token's PUT used to meet the body guard's repository check first (404)."""
    config, handles, _ = setup
    core = make_core(config, handles)

    async def put():
        async with client(core, _bearer(SCOPED_TOKEN)) as http:
            return await http.put(path, json={"query": "cart", "repos": [SECRET_REPO]})

    r = run(put())
    assert r.status_code == 405 and r.json()["error"] == "HTTPError", r.text
    assert "POST" in r.headers["allow"].split(", ")


def test_options_lists_every_method_of_the_path(setup):
    config, handles, token = setup
    core = make_core(config, handles)

    async def options():
        async with client(core, _bearer(token)) as http:
            return await http.options("/v1/knowledge")

    r = run(options())
    assert r.status_code == 405
    assert {"GET", "POST"} <= set(r.headers["allow"].split(", "))


@pytest.mark.parametrize("path", ["/v1/map", "/v1/search"])
def test_a_null_repos_is_422_for_a_scoped_token_too(setup, path):
    """The body guard filled a `null` repos with the token's repositories, so the model never saw it."""
    config, handles, _ = setup
    core = make_core(config, handles)
    r = run(_post(core, path, {"query": "cart", "repos": None}, _bearer(SCOPED_TOKEN)))
    assert r.status_code == 422, r.text


def test_metrics_403_is_documented_as_the_json_it_is(setup):
    """The 200 is Prometheus text, the 403 a JSON error: the document says so for each."""
    config, handles, main_token = setup
    core = make_core(config, handles)
    document = run(_get(core, "/openapi.json", _bearer(main_token))).json()
    assert list(document["paths"]["/metrics"]["get"]["responses"]["403"]["content"]) == ["application/json"]
    forbidden = run(_get(core, "/metrics", _bearer(SCOPED_TOKEN)))
    assert forbidden.status_code == 403 and forbidden.headers["content-type"] == "application/json"
    assert "/metrics names every repository" in forbidden.json()["message"]

"""Every error over HTTP is JSON with the right status, on the real ingress app (stages in local mode)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from semantica.config import config_to_dict
from serving.api.http.contract import NOT_BLANK
from serving.ray.app import IngressCore
from tests.serving.local_ingress import client, local_stage_handles, make_core, run, variant
from tests.serving.ray.test_app import REPO_NAME, make_tiny_index

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("http-errors")
    config = make_tiny_index(root)
    return config, local_stage_handles(config)


@pytest.fixture
def core(setup) -> IngressCore:
    config, handles = setup
    return make_core(config, handles)


async def _post(core, path, **kwargs):
    async with client(core) as http:
        return await http.post(path, **kwargs)


async def _get(core, path):
    async with client(core) as http:
        return await http.get(path)


def _is_json_error(response, status: int) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["error"] and isinstance(body["message"], str)
    return body


def test_search_answers_and_validation_errors_are_json_422(core):
    ok = run(_post(core, "/v1/search", json={"query": "price_of", "k": 2}))
    assert ok.status_code == 200 and ok.json()["hits"][0]["repo"] == REPO_NAME
    bad_json = run(_post(core, "/v1/search", content=b"{nope", headers={"content-type": "application/json"}))
    _is_json_error(bad_json, 422)
    missing = _is_json_error(run(_post(core, "/v1/search", json={"k": 3})), 422)
    assert missing["detail"][0]["field"] == "query"


def test_k_must_be_a_real_integer(core):
    for k in (True, 2.5, "3"):
        body = _is_json_error(run(_post(core, "/v1/search", json={"query": "cart", "k": k})), 422)
        assert body["detail"][0]["field"] == "k"


def test_integral_floats_are_the_integers_the_schema_admits(core):
    """JSON Schema's `integer` admits 3.0; schemathesis sent it for k, depth and tokens and got 422."""
    search = run(_post(core, "/v1/search", json={"query": "cart", "k": 3.0}))
    assert search.status_code == 200 and len(search.json()["hits"]) <= 3, search.text
    graph = run(_post(core, "/v1/graph", json={"op": "callers", "name": "total", "depth": 1.0}))
    assert graph.status_code == 200, graph.text
    mapped = run(_post(core, "/v1/map", json={"repos": [REPO_NAME], "tokens": 400.0}))
    assert mapped.status_code == 200, mapped.text


def test_unknown_strategy_is_422_listing_the_valid_ones(core):
    body = _is_json_error(run(_post(core, "/v1/search", json={"query": "cart", "strategies": ["bogus"]})), 422)
    assert "bogus" in body["message"] and all(s in body["message"] for s in ("vector", "lexical", "symbol", "graph"))


@pytest.mark.parametrize("name", ["", "   ", "..", "a/../b", "a\x00b", "a\nb", "a\x1bb", "./a"])
def test_bad_repository_names_are_422(core, name):
    for path in ("/v1/search", "/v1/feedback"):
        body = _is_json_error(run(_post(core, path, json={"query": "cart", "chunk_ids": ["x"], "repos": [name]}))
                              if path == "/v1/feedback" else
                              run(_post(core, path, json={"query": "cart", "repos": [name]})), 422)
        assert "repos" in json.dumps(body)


def test_unknown_repository_is_404_without_server_paths(core):
    body = _is_json_error(run(_post(core, "/v1/search", json={"query": "cart", "repos": ["no/such"]})), 404)
    assert "no/such" in body["message"]
    assert str(Path(core.config.paths.index_root)) not in body["message"] and "/tmp" not in body["message"]


def _feedback_lines(core) -> list[str]:
    return [line for f in sorted(Path(core.config.serve.feedback_dir).glob("*.jsonl"))
            for line in f.read_text().splitlines()]


def test_feedback_with_a_lone_surrogate_is_stored_clean(core):
    raw = b'{"query": "why \\ud800 fails", "chunk_ids": ["c1"], "comment": "bell\\u0007 \\udfff", ' \
          b'"hits": [{"path": "a\\ud83d.py"}]}'
    r = run(_post(core, "/v1/feedback", content=raw, headers={"content-type": "application/json"}))
    assert r.status_code == 201, r.text
    record = json.loads(_feedback_lines(core)[-1])
    assert record["query"].startswith("why ") and record["query"].endswith(" fails") and "\ud800" not in record["query"]
    assert "\x07" not in record["comment"] and record["hits"][0]["path"].endswith(".py")


@pytest.mark.parametrize("raw", [
    b'{"query": "q", "chunk_ids": ["c"], "rating": NaN}',
    b'{"query": "q", "chunk_ids": ["c"], "rating": Infinity}',
    b'{"query": "q", "chunk_ids": ["c"], "hits": [{"score": -Infinity}]}',
])
def test_feedback_refuses_nan_and_infinity(core, raw):
    before = len(_feedback_lines(core))
    _is_json_error(run(_post(core, "/v1/feedback", content=raw, headers={"content-type": "application/json"})), 422)
    assert len(_feedback_lines(core)) == before  # nothing written
    for line in _feedback_lines(core):  # what is there is strict JSON
        json.loads(line, parse_constant=lambda c: pytest.fail(f"{c} in the feedback log"))


def test_unexpected_error_is_a_generic_json_500_without_detail(setup, caplog):
    config, handles = setup

    class Buggy(IngressCore):
        def search(self, payload, principal=None):
            raise RuntimeError("boom in /srv/secret/index/tiny+shop/lucene")

    core = Buggy(config_to_dict(config), **handles)
    body = _is_json_error(run(_post(core, "/v1/search", json={"query": "cart"})), 500)
    assert body["error"] == "InternalError" and body["reference"]
    assert "boom" not in body["message"] and "/srv" not in json.dumps(body) and "Traceback" not in json.dumps(body)
    assert any("boom" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)  # the server log has it


def test_errors_of_a_variant_config_are_still_json(setup):
    config, handles = setup
    core = make_core(variant(config, "query.max_k=5"), handles)
    body = _is_json_error(run(_post(core, "/v1/search", json={"query": "cart", "k": 6})), 400)
    assert body["error"] == "QueryError" and "5" in body["message"]


def test_unknown_search_mode_is_422_listing_the_modes(core):
    body = _is_json_error(run(_post(core, "/v1/search", json={"query": "cart", "mode": "fastest"})), 422)
    assert body["detail"][0]["field"] == "mode"
    assert all(m in body["message"] for m in ("hybrid", "vector_heavy", "lexical_heavy", "mmr_diverse", "exact_vector"))
    ok = run(_post(core, "/v1/search", json={"query": "price_of", "k": 2, "mode": "exact_vector"}))
    assert ok.status_code == 200 and ok.json()["plan"]["mode"] == "exact_vector"


def test_feedback_on_a_full_disk_is_503_and_the_next_one_is_stored(setup, tmp_path):
    """A real ENOSPC: the feedback directory on a tiny tmpfs, filled (needs root and mount rights; skipped
    loudly otherwise). It was a 500 for every feedback, as if the server had a bug."""
    import subprocess

    config, handles = setup
    mount_point = tmp_path / "full"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount_point)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"SKIPPED LOUDLY: cannot mount a tmpfs here ({mounted.stderr.strip() or 'not root'})")
    try:
        core = make_core(variant(config, f"serve.feedback_dir={mount_point / 'feedback'}"), handles)
        body = {"query": "cart", "chunk_ids": ["c1"], "comment": "x" * 2000}
        assert run(_post(core, "/v1/feedback", json=body)).status_code == 201
        filler = mount_point / "filler"
        with open(filler, "wb", buffering=0) as file, pytest.raises(OSError):
            while True:
                file.write(b"\0" * 4096)
        larger = {**body, "comment": "x" * 6000}  # past the free end of the file's last page
        refused = _is_json_error(run(_post(core, "/v1/feedback", json=larger)), 503)
        assert "try again later" in refused["message"] and "/tmp" not in refused["message"]
        stored = [json.loads(line) for f in (mount_point / "feedback").glob("*.jsonl") for line in f.read_text().splitlines()]
        assert len(stored) == 1  # the refused record left no torn line behind
        filler.unlink()
        assert run(_post(core, "/v1/feedback", json=body)).status_code == 201
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


def test_the_app_serves_exactly_the_catalog_routes(core):
    """`serve --help` prints `serving.api.catalog.ROUTES`: the live app has each, and no other."""
    from serving.api.catalog import ROUTES
    from serving.ray.app import ingress_app

    documented = {"/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json"}
    served = {route.path for route in ingress_app(core).routes} - documented
    assert {path.split("/{")[0] for path in served} == set(ROUTES)


def test_an_empty_knowledge_status_is_a_422_listing_the_statuses(core):
    """An empty `status=` is refused with the statuses, and the document lists them (a generated request
    does not meet the refusal)."""
    status = _is_json_error(run(_get(core, "/v1/knowledge?status=")), 422)
    assert "'' is not a knowledge status" in status["message"] and "candidate, active, review, retired" in status["message"]
    [parameter] = [p for p in _document(core)["paths"]["/v1/knowledge"]["get"]["parameters"] if p["name"] == "status"]
    assert parameter["schema"]["items"]["enum"] == ["candidate", "active", "review", "retired"]


def test_feedback_that_selects_nothing_is_a_422_and_documented(core):
    body = {"query": "cart", "chunk_ids": [], "hits": [], "knowledge_ids": []}
    empty = _is_json_error(run(_post(core, "/v1/feedback", json=body)), 422)
    assert empty["message"] == ("body: feedback selects nothing: send at least one chunk id (chunk_ids), hit (hits) "
                                "or knowledge entry (knowledge_ids)")
    assert len(_document(core)["components"]["schemas"]["FeedbackBody"]["anyOf"]) == 3


def test_an_empty_repository_name_in_a_knowledge_body_is_a_422_and_documented(core):
    blank = _is_json_error(run(_post(core, "/v1/knowledge", json={"repos": [""], "title": "t", "text": "x"})), 422)
    assert blank["detail"][0]["field"] == "repos" and "repository name '' is empty" in blank["message"]
    assert _document(core)["components"]["schemas"]["KnowledgeBody"]["properties"]["repos"]["items"]["minLength"] == 1


def test_primary_repo_left_with_the_budgets_and_is_an_unknown_field_422(core):
    body = {"query": "cart", "repos": [REPO_NAME], "primary_repo": REPO_NAME}
    primary = _is_json_error(run(_post(core, "/v1/search", json=body)), 422)
    assert primary["detail"][0]["field"] == "primary_repo"
    assert "primary_repo" not in _document(core)["components"]["schemas"]["SearchBody"]["properties"]


def test_a_feedback_query_of_c1_control_characters_is_a_422_saying_so(core):
    c1 = _is_json_error(run(_post(core, "/v1/feedback", json={"query": "\u0085\u0090", "chunk_ids": ["a"]})), 422)
    assert c1["detail"][0]["field"] == "query" and "only spaces or control characters" in c1["message"]
    assert _document(core)["components"]["schemas"]["FeedbackBody"]["properties"]["query"]["pattern"] == NOT_BLANK


def test_graph_answers_carry_freshness_and_listings_the_worktree_commit(core):
    """One freshness shape on every answer; `/v1/repos` and `/healthz` give a worktree snapshot's HEAD."""
    search = run(_post(core, "/v1/search", json={"query": "price_of", "k": 2})).json()
    graph = run(_post(core, "/v1/graph", json={"op": "callers", "name": "price_of"})).json()
    commit = search["freshness"][REPO_NAME]["commit"]
    assert commit and graph["freshness"][REPO_NAME]["commit"] == commit
    assert set(graph["freshness"][REPO_NAME]) == set(search["freshness"][REPO_NAME])
    [listed] = run(_get(core, "/v1/repos")).json()
    [healthy] = run(_get(core, "/healthz")).json()["repos"]
    assert listed["commit"] == healthy["commit"] == commit


def _document(core) -> dict:
    return run(_get(core, "/openapi.json")).json()

def test_a_body_that_is_not_json_says_to_send_json(core):
    form = _is_json_error(run(_post(core, "/v1/search", content=b"query=cart",
                                    headers={"content-type": "application/x-www-form-urlencoded"})), 422)
    assert "Content-Type: application/json" in form["message"]


def test_a_body_is_parsed_once_and_validated_once(core, monkeypatch):
    """`BodyGuard` parses the body (its sizes and scope need the value); the route's model validates that value
    once: FastAPI never parses the bytes again, and the ingress does not validate the same model again."""
    import starlette.requests

    from serving.api.http import models

    parses, validations = [], []
    real_json, real_names = starlette.requests.Request.json, models._repo_names

    async def counted_json(self):
        parses.append(self.url.path)
        return await real_json(self)

    monkeypatch.setattr(starlette.requests.Request, "json", counted_json)
    monkeypatch.setattr(models, "_repo_names", lambda names: validations.append(names) or real_names(names))
    answer = run(_post(core, "/v1/search", json={"query": "price_of", "repos": [REPO_NAME], "k": 2}))
    assert answer.status_code == 200, answer.text
    assert parses == [] and validations == [[REPO_NAME]]


def _property(core, model: str, name: str) -> dict:
    return _document(core)["components"]["schemas"][model]["properties"][name]


def test_a_search_query_of_control_characters_is_empty_as_documented(core):
    """The document's query pattern refuses it, so the server does, as it refuses a blank one (before: 200
    for `\\x19`)."""
    for query in ("\x19\x85", " \t"):
        blank = _is_json_error(run(_post(core, "/v1/search", json={"query": query})), 400)
        assert blank["error"] == "QueryError" and "query is empty" in blank["message"], query
    assert _property(core, "SearchBody", "query")["pattern"] == NOT_BLANK


def test_grep_takes_integral_floats_and_documents_its_bounds(core):
    """`5.0` is the integer JSON Schema admits (before: 422); `max_count: 0` is refused and the document says
    so (before: documented as any integer, refused with 400)."""
    whole = run(_post(core, "/v1/grep", json={"pattern": "price_of", "max_count": 5.0, "context": 1.0}))
    assert whole.status_code == 200, whole.text
    assert _is_json_error(run(_post(core, "/v1/grep", json={"pattern": "x", "max_count": 0})), 400)
    schema = _property(core, "GrepBody", "max_count")
    assert {"type": "integer", "minimum": 1} in schema["anyOf"]
    assert _property(core, "GrepBody", "context")["minimum"] == 0
    assert {"type": "null"} in _property(core, "GrepBody", "branch")["anyOf"]


def test_a_feedback_rating_is_a_number_not_a_boolean(core):
    """`rating: false` is not a JSON number (before: stored as 0.0)."""
    boolean = _is_json_error(run(_post(core, "/v1/feedback", json={"query": "q", "chunk_ids": ["a"], "rating": False})), 422)
    assert boolean["detail"][0]["field"] == "rating"
    stored = run(_post(core, "/v1/feedback", json={"query": "q", "chunk_ids": ["a"], "rating": 1}))
    assert stored.status_code == 201, stored.text


def test_a_control_character_in_a_feedback_snapshot_key_is_refused_not_dropped(core):
    """The key is a repository name, checked as sent (before: the C1 character was dropped and it was stored)."""
    body = {"query": "q", "chunk_ids": ["a"], "snapshots": {"tiny/shop\x9b": "s"}}
    refused = _is_json_error(run(_post(core, "/v1/feedback", json=body)), 422)
    assert refused["detail"][0]["field"] == "snapshots" and "control character" in refused["message"]


def test_knowledge_fields_are_documented_as_the_store_checks_them(core):
    """Before: a title of '', a `repo` or `?repo=` with a control character, an `adr` without its file were
    schema-valid and refused."""
    assert _is_json_error(run(_post(core, "/v1/knowledge", json={"title": " ", "text": "x"})), 422)
    title = _property(core, "KnowledgeBody", "title")
    assert title["minLength"] == 1 and title["maxLength"] == 200 and title["pattern"].startswith("^")
    repo = _property(core, "KnowledgeBody", "repo")
    assert {"type": "string", "maxLength": 0} in repo["anyOf"] and any("pattern" in s for s in repo["anyOf"])
    [listing] = [p for p in _document(core)["paths"]["/v1/knowledge"]["get"]["parameters"] if p["name"] == "repo"]
    assert any("pattern" in s for s in listing["schema"]["anyOf"])
    cited = _document(core)["components"]["schemas"]["KnowledgeBody"]["anyOf"]
    assert any(branch.get("required") == ["source_kind", "source_ref", "repo"] for branch in cited)


def test_an_adr_citing_a_file_the_snapshot_lacks_is_a_404(core):
    """What the document cannot rule out (which files a snapshot holds) is a 404, not a 422 for valid input."""
    body = {"repo": REPO_NAME, "title": "t", "text": "x", "source_kind": "adr", "source_ref": "docs/adr/none.md"}
    missing = _is_json_error(run(_post(core, "/v1/knowledge", json=body)), 404)
    assert "names no file" in missing["message"]
    found = run(_post(core, "/v1/knowledge", json={**body, "source_ref": "README.md"}))
    assert found.status_code == 201, found.text


def test_rerankers_without_a_model_are_documented_as_off(core):
    """`cross_encoder: true` on a server without its model is a 400; the document allows only false or null there
    (before: any boolean). `ltr` (a lab plug-in, not the product's) is an unknown field: a 4xx."""
    assert _is_json_error(run(_post(core, "/v1/search", json={"query": "cart", "cross_encoder": True})), 400)
    assert run(_post(core, "/v1/search", json={"query": "cart", "ltr": True})).status_code in (400, 422)
    assert {"type": "boolean", "enum": [False]} in _property(core, "SearchBody", "cross_encoder")["anyOf"]

"""`POST /v1/plan` on the real ingress app: an index-batch manifest in, the CLI's plan out (the same JSON
`semantica plan --manifest --json` prints), scope-checked, and every refusal a JSON 4xx."""

from __future__ import annotations

import json

import pytest
import yaml

from jobs.cli import main
from serving.api.http.security import ensure_token_file
from tests.serving.local_ingress import client, local_stage_handles, make_core, run, variant
from tests.serving.ray.test_app import REPO_NAME, make_tiny_index

pytestmark = pytest.mark.timeout(600)
SCOPED_TOKEN = "tiny-only-token-0123456789"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("http-plan")
    config = make_tiny_index(root)
    token_file, _ = ensure_token_file(root / "secrets" / "token")
    (root / "tokens.yaml").write_text(yaml.safe_dump([{"name": "t", "token": SCOPED_TOKEN, "repos": ["tiny/*"]}]))
    return config, local_stage_handles(config), root


async def _post(core, body, headers=None):
    async with client(core, headers) as http:
        return await http.post("/v1/plan", json=body)


def _refused(response, status: int, error: str = "PlanError") -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == error and body["request_id"] == response.headers["x-request-id"]
    return body["message"]


def test_a_manifest_is_planned_as_the_cli_plans_it(setup, tmp_path, capsys):
    config, handles, root = setup
    entry = {"name": REPO_NAME, "path": str(root / "repo"), "exclude": ["README.md"]}
    response = run(_post(make_core(config, handles), {"repos": [entry], "files": True}))
    assert response.status_code == 200, response.text
    [plan] = response.json()["repos"]
    assert plan["repo"] == REPO_NAME and plan["included"] == ["shop/cart.py", "shop/prices.py"]
    assert plan["skipped"]["excluded"]["examples"][0]["path"] == "README.md"
    manifest = tmp_path / "repos.yaml"
    manifest.write_text(yaml.safe_dump({"repos": [entry]}))
    assert main(["plan", "--manifest", str(manifest), "--json", "--index-root", str(config.paths.index_root),
                 "--set", f"paths.cache_dir={config.paths.cache_dir}"]) == 0
    [cli] = json.loads(capsys.readouterr().out)
    assert {k: v for k, v in plan.items() if k != "seconds"} == {k: v for k, v in cli.items() if k != "seconds"}
    without = run(_post(make_core(config, handles), {"repos": [entry]}))
    assert without.json()["repos"][0]["included"] == [] and without.json()["repos"][0]["files"] == 2


def test_what_the_cli_refuses_is_a_422_with_its_message(setup):
    config, handles, root = setup
    body = {"repos": [{"name": REPO_NAME, "path": str(root / "repo"), "commit": "no-such-commit"}]}
    assert "no-such-commit" in _refused(run(_post(make_core(config, handles), body)), 422)


def test_entries_the_server_does_not_plan_are_refused_before_any_work(setup, tmp_path):
    """What the document rules out is a 422; a path with no repository is a 404 and one outside
    `plan.http_roots` a 403 (no schema can rule them out, and a schema-valid request is not a 422)."""
    config, handles, root = setup
    core = make_core(config, handles)
    repo = str(root / "repo")
    cases = {
        "absolute path": ({"name": "a/b", "path": "repo"}, 422),
        "not a git checkout": ({"name": "a/b", "path": str(tmp_path)}, 404),
        "schemes only: none": ({"name": "a/b", "url": "https://example.com/a/b.git"}, 422),
    }
    for why, (entry, status) in cases.items():
        assert why in _refused(run(_post(core, {"repos": [entry]})), status)
    confined = make_core(variant(config, f"plan.http_roots=[{tmp_path}]"), handles)
    assert "plan.http_roots" in _refused(run(_post(confined, {"repos": [{"name": "a/b", "path": repo}]})), 403)
    for bad in ({"repos": []}, {"repos": [{"path": repo}]}, {"repos": [{"name": "a/b", "path": repo, "url": "x"}]},
                {"repos": [{"name": "a/b", "path": repo, "bogus": 1}]}, {"repos": [{"name": "..", "path": repo}]}):
        _refused(run(_post(core, bad)), 422, "ValidationError")


def test_a_plan_needs_a_token_that_reads_every_repository(setup):
    config, handles, root = setup
    secured = variant(config, "auth.mode=required", f"auth.token_file={root / 'secrets' / 'token'}",
                      f"auth.tokens_file={root / 'tokens.yaml'}")
    core = make_core(secured, handles)
    body = {"repos": [{"name": REPO_NAME, "path": str(root / "repo")}]}
    _refused(run(_post(core, body)), 401, "Unauthorized")
    scoped = {"Authorization": f"Bearer {SCOPED_TOKEN}"}
    _refused(run(_post(core, body, scoped)), 403, "Forbidden")  # its own repository: still the server's disk
    other = {"repos": [{"name": "team/secret", "path": str(root / "repo")}]}
    _refused(run(_post(core, other, scoped)), 404, "NotFound")  # a name outside its scope: as on every route


def test_the_document_declares_the_route(setup):
    config, handles, _ = setup

    async def document():
        async with client(make_core(config, handles)) as http:
            return (await http.get("/openapi.json")).json()

    published = run(document())
    route = published["paths"]["/v1/plan"]["post"]
    assert {"200", "401", "403", "404", "413", "422", "503", "504"} <= set(route["responses"])
    entry = published["components"]["schemas"]["PlanEntry"]
    assert entry["properties"]["name"]["pattern"] and "name" in entry["required"]

"""`POST /v1/search` with `branch`: the snapshots indexed with `index --ref`, under each token's scope."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from semantica.ondisk.branch_keys import branch_key
from serving.api.http.security import ensure_token_file
from tests.serving.local_ingress import client, local_stage_handles, make_core, run, variant
from tests.serving.ray.test_app import REPO_NAME, make_tiny_index

pytestmark = pytest.mark.timeout(300)
BRANCH = "feature"
OTHER_REPO = "team/secret"
SCOPED_TOKEN = "tiny-branch-token-0123456789"
ONLY_ON_BRANCH = "def apply_coupon(total, percent):\n    return total * (100 - percent) // 100\n"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """The tiny shop at its default branch and at `feature` (which adds a coupon module), the same checkout as a
    second repository at both, and a token that reads only the first."""
    from pipelines.indexer import Indexer

    root = tmp_path_factory.mktemp("http-branches")
    config = make_tiny_index(root)
    repo = root / "repo"
    git = ["git", "-C", str(repo), "-c", "user.email=t@e", "-c", "user.name=t"]
    subprocess.run([*git, "checkout", "-qb", BRANCH], check=True)
    (repo / "shop" / "coupons.py").write_text(ONLY_ON_BRANCH)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "coupons"], check=True)
    indexer = Indexer(config, progress=False)
    indexer.index(str(repo), branch_key(REPO_NAME, BRANCH), BRANCH)
    indexer.index(str(repo), OTHER_REPO, "HEAD")
    indexer.index(str(repo), branch_key(OTHER_REPO, BRANCH), BRANCH)
    token_file, _ = ensure_token_file(root / "secrets" / "token")
    tokens = root / "secrets" / "tokens.yaml"
    tokens.write_text(yaml.safe_dump([{"name": "tiny-team", "token": SCOPED_TOKEN, "repos": ["tiny/*"]}]))
    secured = variant(config, "auth.mode=required", f"auth.token_file={token_file}", f"auth.tokens_file={tokens}")
    return make_core(secured, local_stage_handles(config)), token_file.read_text().strip()


def _search(core, token: str, **body):
    async def post():
        async with client(core, {"Authorization": f"Bearer {token}"}) as http:
            return await http.post("/v1/search", json={"query": "apply_coupon percent", "k": 5, **body})

    return run(post())


def test_branch_reads_that_branchs_snapshots_only(setup):
    core, token = setup
    default = _search(core, token, repos=[REPO_NAME])
    assert default.status_code == 200, default.text
    assert set(default.json()["snapshots"]) == {REPO_NAME}
    assert not any("apply_coupon" in h["content"] for h in default.json()["hits"])
    named = _search(core, token, repos=[REPO_NAME], branch=BRANCH)
    assert named.status_code == 200, named.text
    assert set(named.json()["snapshots"]) == {branch_key(REPO_NAME, BRANCH)}
    assert named.json()["hits"][0]["path"] == "shop/coupons.py"
    every = _search(core, token, branch=BRANCH)  # no repos: every repository at that branch
    assert set(every.json()["snapshots"]) == {branch_key(REPO_NAME, BRANCH), branch_key(OTHER_REPO, BRANCH)}


def test_a_scoped_token_reads_its_own_repositories_at_the_branch(setup):
    core, _ = setup
    mine = _search(core, SCOPED_TOKEN, branch=BRANCH)
    assert mine.status_code == 200, mine.text
    assert set(mine.json()["snapshots"]) == {branch_key(REPO_NAME, BRANCH)}
    default = _search(core, SCOPED_TOKEN)  # no branch: its repositories at the default branch, as for any caller
    assert default.status_code == 200 and set(default.json()["snapshots"]) == {REPO_NAME}, default.text
    assert OTHER_REPO not in mine.text
    assert _search(core, SCOPED_TOKEN, repos=[OTHER_REPO], branch=BRANCH).status_code == 404


def test_a_bad_or_unknown_branch_is_a_json_error(setup):
    core, token = setup
    unknown = _search(core, token, branch="nope")
    assert unknown.status_code == 404 and "no repository has a snapshot of branch 'nope'" in unknown.json()["message"]
    assert _search(core, SCOPED_TOKEN, branch="nope").status_code == 404
    twice = _search(core, token, repos=[branch_key(REPO_NAME, BRANCH)], branch=BRANCH)
    assert twice.status_code == 422 and "already names a branch" in twice.json()["message"]
    for bad in ("", "a/..", 7):
        for caller in (token, SCOPED_TOKEN):  # a scoped token's body is refused by the model too, not a 404
            r = _search(core, caller, branch=bad)
            assert r.status_code == 422 and r.json()["detail"][0]["field"] == "branch", r.text

"""One freshness block on every answer and every front: search, grep, graph and map answers over HTTP (the real
ingress app), MCP (the SDK's in-process client) and the CLI (`--json`) carry `freshness` as one object keyed by
repository whose values are `semantica.ondisk.freshness.Freshness`, all built by `semantica.snapshot.answer_freshness`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from jobs.cli import main
from semantica.ondisk.freshness import Freshness
from serving.api.mcp.server import SemanticaTools, build_server
from serving.pipeline import SearchPipeline
from tests.serving.local_ingress import client, local_stage_handles, make_core, run
from tests.serving.ray.test_app import REPO_NAME, make_tiny_index

pytestmark = pytest.mark.timeout(300)
FRESHNESS_KEYS = {f.name for f in dataclasses.fields(Freshness)}
KINDS = ("search", "grep", "graph", "map")


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    return make_tiny_index(tmp_path_factory.mktemp("freshness-fronts"))


def http_answers(config) -> dict[str, dict[str, Any]]:
    core = make_core(config, local_stage_handles(config))
    bodies = {"search": ("/v1/search", {"query": "price_of", "k": 2}),
              "grep": ("/v1/grep", {"pattern": "price_of"}),
              "graph": ("/v1/graph", {"op": "callers", "name": "price_of"}),
              "map": ("/v1/map", {"repos": [REPO_NAME]})}

    async def answers() -> dict[str, dict[str, Any]]:
        async with client(core) as http:
            out = {}
            for kind, (path, body) in bodies.items():
                response = await http.post(path, json=body)
                assert response.status_code == 200, response.text
                out[kind] = response.json()
            return out

    return run(answers())


def mcp_answers(config) -> dict[str, dict[str, Any]]:
    tools = SemanticaTools(config, SearchPipeline(config))
    calls = {"search": ("search", {"query": "price_of", "k": 2}), "grep": ("grep", {"pattern": "price_of"}),
             "graph": ("callers", {"name": "price_of"}), "map": ("repo_map", {"repo": REPO_NAME}),
             "context": ("get_context", {"query": "price_of"})}
    out: dict[str, dict[str, Any]] = {}

    async def answers() -> None:
        async with Client(build_server(tools)) as mcp:
            for kind, (tool, arguments) in calls.items():
                result = await mcp.call_tool(tool, arguments)
                assert not result.is_error, result.content
                out[kind] = result.structured_content

    anyio.run(answers)
    return out


def cli_answers(config, capsys) -> dict[str, dict[str, Any]]:
    common = ["--index-root", str(config.paths.index_root), "--set", f"paths.cache_dir={config.paths.cache_dir}",
              "--json"]
    commands = {"search": ["query", "price_of", "--k", "2"], "grep": ["grep", "price_of"],
                "graph": ["callers", "price_of"], "map": ["map", REPO_NAME]}
    out = {}
    for kind, argv in commands.items():
        code = main([*argv, *common])
        printed, err = capsys.readouterr()
        assert code == 0, err
        out[kind] = json.loads(printed)
    return out


def test_every_answer_on_every_front_carries_one_freshness_shape(config, capsys):
    fronts = {"http": http_answers(config), "mcp": mcp_answers(config), "cli": cli_answers(config, capsys)}
    commit = fronts["http"]["search"]["freshness"][REPO_NAME]["commit"]
    assert commit
    for front, answers in fronts.items():
        for kind, answer in answers.items():
            freshness = answer.get("freshness")
            assert isinstance(freshness, dict) and list(freshness) == [REPO_NAME], (front, kind, freshness)
            block = freshness[REPO_NAME]
            assert set(block) == FRESHNESS_KEYS, (front, kind, set(block) ^ FRESHNESS_KEYS)
            assert block["stale"] is False and block["commit"] == commit and block["repo"] == REPO_NAME, (front, kind)
    assert all(set(KINDS) <= set(answers) for answers in fronts.values())


def test_an_answer_whose_freshness_cannot_be_checked_still_answers(config, tmp_path, capsys):
    """A snapshot whose source is gone is `stale: null` with the reason on a map answer too, never an error; the
    CLI's graph and map answers say so in one line, as its search and grep answers do."""
    import shutil

    from serving.planning.repo_map import RepoMapService

    moved = tmp_path / "moved"
    source = Path(config.paths.index_root).parent / "repo"
    shutil.copytree(source, moved / "repo")
    shutil.rmtree(source)
    common = ["--index-root", str(config.paths.index_root), "--set", f"paths.cache_dir={config.paths.cache_dir}"]
    try:
        answer = RepoMapService(config).run(REPO_NAME)
        printed = {argv[0]: (main([*argv, *common]), capsys.readouterr().out)
                   for argv in (["callers", "price_of"], ["map", REPO_NAME])}
    finally:
        shutil.copytree(moved / "repo", source)
    assert answer["files"] and answer["freshness"][REPO_NAME]["stale"] is None
    assert "not reachable" in answer["freshness"][REPO_NAME]["reason"]
    for command, (code, out) in printed.items():
        assert code == 0 and f"freshness unknown: {REPO_NAME}: source path" in out, (command, out)


def test_a_dirty_worktree_snapshot_names_its_commit_on_every_front(tmp_path_factory, capsys):
    """`index --repo .` over uncommitted edits: the manifest records HEAD and the dirt (`Manifest.built_commit`,
    `built_dirty`); `/v1/repos`, `/healthz`, MCP's list_repos, `semantica repos` and every freshness block say so."""
    import subprocess

    from pipelines.indexer import Indexer
    from semantica.snapshot import SnapshotSet

    config = make_tiny_index(tmp_path_factory.mktemp("freshness-dirty"))
    repo = Path(config.paths.index_root).parent / "repo"
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    cart = repo / "shop" / "cart.py"
    cart.write_text(cart.read_text() + "\n\ndef discount(total):\n    return total * 0.9\n")
    Indexer(config, progress=False).index(str(repo), REPO_NAME)

    core = make_core(config, local_stage_handles(config))

    async def listings() -> tuple[Any, Any, Any]:
        async with client(core) as http:
            return ((await http.get("/v1/repos")).json(), (await http.get("/healthz")).json(),
                    (await http.post("/v1/search", json={"query": "discount"})).json())

    [listed], health, search = run(listings())
    [healthy] = health["repos"]
    [mcp_row] = SemanticaTools(config, SearchPipeline(config)).list_repos().repos
    assert main(["repos", "--index-root", str(config.paths.index_root), "--json"]) == 0
    [cli_row] = json.loads(capsys.readouterr().out)
    rows = {"http repos": listed, "healthz": healthy, "mcp": mcp_row.model_dump(), "cli": cli_row,
            "http repos freshness": listed["freshness"], "search freshness": search["freshness"][REPO_NAME]}
    for front, row in rows.items():
        assert (row["commit"], row["dirty"]) == (head, True), (front, row)
    assert main(["repos", "--index-root", str(config.paths.index_root)]) == 0
    assert f"commit {head[:12]}+dirty" in capsys.readouterr().out
    manifest = SnapshotSet(config).get(REPO_NAME).manifest
    assert manifest.commit == "" and (manifest.built_commit, manifest.built_dirty) == (head, True)

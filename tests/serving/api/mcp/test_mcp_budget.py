"""The MCP token-budget contract over the real pipeline on this repository's session index, through the
SDK's in-process client: over 50 queries no answer exceeds `budget_tokens` (counted with the encoder's
tokenizer on what the client receives), cursors return the rest in rank order, a bad cursor is a
JSON-RPC error, and every tool is annotated."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from jobs.eval.golden import load_golden_set
from serving.api.mcp.budget import TokenCounter
from serving.api.mcp.server import SemanticaTools, build_server
from serving.pipeline import SearchPipeline
from tests.conftest import GOLDEN_SET

pytestmark = pytest.mark.timeout(900)
BUDGETS = (300, 500, 1000, 2000, 4000)
QUERIES = 50


def not_a_syncer(**_: Any) -> dict[str, Any]:
    raise AssertionError("these tests never sync")


@pytest.fixture(scope="module")
def tools(indexed_self) -> SemanticaTools:  # noqa: ANN001
    return SemanticaTools(indexed_self.config, SearchPipeline(indexed_self.config), syncer=not_a_syncer)


@pytest.fixture(scope="module")
def counter(indexed_self) -> TokenCounter:  # noqa: ANN001
    return TokenCounter(indexed_self.config.encoder.model_path)


def queries() -> list[str]:
    golden = [q.query for q in load_golden_set(GOLDEN_SET)]
    extra = [f"where is {q} defined and what calls it" for q in golden]
    return (golden + extra)[:QUERIES]


def call_all(tools: SemanticaTools, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Each call's result, or the MCPError it raised, through the SDK's in-process client."""
    out: list[Any] = []

    async def main() -> None:
        async with Client(build_server(tools)) as client:
            for name, arguments in calls:
                try:
                    out.append(await client.call_tool(name, arguments))
                except MCPError as exc:
                    out.append(exc)

    anyio.run(main)
    return out


def answer_tokens(counter: TokenCounter, result: Any) -> int:
    assert not result.is_error, result.content
    text = "".join(c.text for c in result.content if getattr(c, "text", None))
    return max(counter.count(text), counter.count(json.dumps(result.structured_content, ensure_ascii=False)))


def test_no_answer_exceeds_budget_tokens(tools: SemanticaTools, counter: TokenCounter, indexed_self) -> None:  # noqa: ANN001
    calls: list[tuple[str, dict[str, Any]]] = []
    for number, query in enumerate(queries()):
        budget = BUDGETS[number % len(BUDGETS)]
        calls.append(("search", {"query": query, "budget_tokens": budget}))
        if number % 5 == 0:
            calls.append(("get_context", {"query": query, "budget_tokens": budget}))
        if number % 10 == 0:
            calls.append(("repo_map", {"repo": indexed_self.name, "query": query, "budget_tokens": budget}))
    results = call_all(tools, calls)
    cut = 0
    for (name, arguments), result in zip(calls, results):
        assert not isinstance(result, Exception), (name, arguments, result)
        assert answer_tokens(counter, result) <= arguments["budget_tokens"], (name, arguments)
        cut += result.structured_content["next_cursor"] is not None
    assert len([c for c in calls if c[0] == "search"]) == QUERIES
    assert cut > 0  # small budgets really cut answers short


def test_cursors_return_the_rest_in_rank_order(tools: SemanticaTools, counter: TokenCounter) -> None:
    query = "WeightedRRF fuse ranked lists"
    [full] = call_all(tools, [("search", {"query": query})])
    expected = [h["citation"] for h in full.structured_content["hits"]]
    seen: list[str] = []
    cursor = None
    for _ in range(len(expected) + 1):
        arguments = {"query": query, "budget_tokens": 400, **({"cursor": cursor} if cursor else {})}
        [page] = call_all(tools, [("search", arguments)])
        assert answer_tokens(counter, page) <= 400
        seen += [h["citation"] for h in page.structured_content["hits"]]
        cursor = page.structured_content["next_cursor"]
        if cursor is None:
            break
    assert seen == expected and len(expected) > 1


def test_bad_cursors_are_jsonrpc_errors(tools: SemanticaTools) -> None:
    [page] = call_all(tools, [("search", {"query": "SnapshotSet.get", "budget_tokens": 150})])
    cursor = page.structured_content["next_cursor"]
    assert cursor
    results = call_all(tools, [
        ("search", {"query": "SnapshotSet.get", "cursor": "not-a-cursor!"}),
        ("search", {"query": "another query", "cursor": cursor}),
        ("get_context", {"query": "SnapshotSet.get", "cursor": cursor}),
        ("search", {"query": "SnapshotSet.get", "cursor": cursor, "budget_tokens": 5000}),
    ])
    for bad in results[:3]:
        assert isinstance(bad, MCPError) and bad.code == INVALID_PARAMS, bad
    assert "other arguments" in results[1].message and "continues `search`" in results[2].message
    assert not isinstance(results[3], Exception) and results[3].structured_content["hits"]


def test_too_small_a_budget_is_a_tool_error(tools: SemanticaTools) -> None:
    [result] = call_all(tools, [("search", {"query": "CsrGraphStore", "budget_tokens": 5})])
    assert result.is_error and "too small" in result.content[0].text


WRITING_TOOLS = {"sync", "knowledge_propose"}  # re-index / store an entry; every other tool only reads


def test_every_tool_is_annotated(tools: SemanticaTools) -> None:
    listed: list[Any] = []

    async def main() -> None:
        async with Client(build_server(tools)) as client:
            listed.extend((await client.list_tools()).tools)

    anyio.run(main)
    assert {t.name for t in listed} >= {"search", "get_context", "repo_map", "sync", "list_repos"}
    for tool in listed:
        assert tool.annotations is not None and tool.annotations.read_only_hint is not None, tool.name
        assert tool.annotations.read_only_hint == (tool.name not in WRITING_TOOLS), tool.name
        assert tool.output_schema is not None, tool.name


def test_sync_reports_progress(tmp_path, indexed_self) -> None:  # noqa: ANN001
    """A real sync of a one-file repository: the client gets a start and an end progress notification."""
    import subprocess

    from pipelines.sync import RepoSyncer
    from tests.conftest import make_config

    repo = tmp_path / "tiny"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "x"],
                   check=True)
    config = make_config(tmp_path)
    syncer = RepoSyncer(config)
    tools = SemanticaTools(config, SearchPipeline(config), syncer=lambda **kw: syncer.sync(**kw).to_dict())
    progress: list[tuple[float, float | None, str | None]] = []
    out: list[Any] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def main() -> None:
        async with Client(build_server(tools)) as client:
            out.append(await client.call_tool("sync", {"path": str(repo)}, progress_callback=on_progress))

    anyio.run(main)
    assert out[0].structured_content["reindexed"] is True
    assert [p[:2] for p in progress] == [(0, 1), (1, 1)] and progress[-1][2] == "first index"

"""The MCP `grep` tool through the SDK's in-process client on a real index: matches with freshness, read-only
annotations, `budget_tokens` packing with a cursor that returns the rest in order, and bad patterns as tool errors."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from semantica.runtime.token_count import TokenCounter
from serving.api.mcp.server import SemanticaTools, build_server
from serving.pipeline import SearchPipeline
from tests.serving.api.mcp.test_mcp_budget import call_all

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def tools(indexed_exact) -> SemanticaTools:
    return SemanticaTools(indexed_exact.config, SearchPipeline(indexed_exact.config))


call = call_all  # the in-process SDK client of the budget tests


def test_grep_answers_and_is_annotated_read_only(tools, indexed_exact):
    [result] = call(tools, [("grep", {"pattern": "class ErrorKind(Enum):"})])
    body = result.structured_content
    assert not result.is_error and [(m["path"], m["column"]) for m in body["matches"]] == [("semantica/errors.py", 1)]
    assert body["freshness"][indexed_exact.name]["repo"] == indexed_exact.name and body["truncated"] is False
    listed: list[Any] = []

    async def main() -> None:
        async with Client(build_server(tools)) as client:
            listed.extend((await client.list_tools()).tools)

    anyio.run(main)
    (grep,) = [t for t in listed if t.name == "grep"]
    assert grep.annotations.read_only_hint is True and grep.output_schema is not None


GREP_BUDGET = 900  # the envelope (freshness, snapshots) is a few hundred tokens; a few matches fit beside it


def test_budget_tokens_pack_matches_and_the_cursor_returns_the_rest_in_order(tools, indexed_exact):
    counter = TokenCounter(indexed_exact.config.encoder.model_path)
    arguments = {"pattern": "error", "ignore_case": True, "max_count": 60}
    [whole] = call(tools, [("grep", arguments)])
    expected = [(m["path"], m["line"]) for m in whole.structured_content["matches"]]
    seen: list[tuple[str, int]] = []
    cursor = None
    for _ in range(100):
        [page] = call(tools, [("grep", {**arguments, "budget_tokens": GREP_BUDGET,
                                         **({"cursor": cursor} if cursor else {})})])
        assert not page.is_error, page.content
        assert counter.count(page.content[0].text) <= GREP_BUDGET  # the text the agent is sent
        seen += [(m["path"], m["line"]) for m in page.structured_content["matches"]]
        cursor = page.structured_content["next_cursor"]
        if cursor is None:
            break
    assert seen == expected and len(expected) == 60


def test_bad_patterns_and_cursors_are_errors_the_agent_can_act_on(tools):
    results = call(tools, [("grep", {"pattern": "(unclosed", "regex": True}),
                           ("grep", {"pattern": "x", "cursor": "not-a-cursor!"})])
    assert results[0].is_error and "invalid regex" in results[0].content[0].text
    assert isinstance(results[1], MCPError) and results[1].code == INVALID_PARAMS
